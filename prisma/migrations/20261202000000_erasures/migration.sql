-- Account erasure (docs/operations.md, "Account erasure"): one row per erased user, kept after
-- every other row of theirs is gone, so replay, recovery and reconciliation never bring them
-- back. It holds the id and the erasure's progress, nothing else about the person.
CREATE TABLE "erasures" (
    "user_id" BIGINT NOT NULL,
    "state" VARCHAR(16) NOT NULL DEFAULT 'ERASING',
    "requested_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    "progress" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "erasures_pkey" PRIMARY KEY ("user_id")
);

-- The erasures in progress, which reads filter (their posts, their place in lists).
CREATE INDEX "erasures_erasing_idx" ON "erasures"("user_id") WHERE "state" = 'ERASING';
