-- Entities a product's own service owns (ENTITY_TYPES): what Tally needs to count them, that
-- they exist, who owns them and that they were deleted, under a numeric id of Tally's own
-- (the entity_id of their facts, keys and events). The owner's id of an entity is its `key`.
CREATE TABLE "entities" (
    "id" BIGSERIAL NOT NULL,
    "entity_type" VARCHAR(32) NOT NULL,
    "key" VARCHAR(128) NOT NULL,
    "owner_id" BIGINT,
    "version" BIGINT NOT NULL,
    "registered_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "entities_pkey" PRIMARY KEY ("id")
);

-- How the owner names it: one row per (type, key), live or deleted.
CREATE UNIQUE INDEX "entities_entity_type_key_key" ON "entities"("entity_type", "key");

-- The deleted ones whose facts are still to be removed.
CREATE INDEX "entities_deleted_at_idx" ON "entities"("deleted_at") WHERE "deleted_at" IS NOT NULL;
