-- Views persisted from Redis, so they survive a Redis loss (src/counters/viewSnapshots.ts).
CREATE TABLE "entity_views" (
    "entity_type" VARCHAR(32) NOT NULL,
    "entity_id" BIGINT NOT NULL,
    "total" BIGINT NOT NULL,
    "viewers" BIGINT NOT NULL,
    "sketch" BYTEA NOT NULL,
    "snapshot_ms" BIGINT NOT NULL,

    CONSTRAINT "entity_views_pkey" PRIMARY KEY ("entity_type","entity_id")
);
