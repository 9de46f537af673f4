-- When a deleted entity's facts were removed (after DELETED_ENTITY_RETENTION_MS): the purge
-- looks only at deleted entities not purged yet.
ALTER TABLE "entities" ADD COLUMN "purged_at" TIMESTAMPTZ(3);

DROP INDEX "entities_deleted_at_idx";
CREATE INDEX "entities_deleted_at_idx" ON "entities"("deleted_at") WHERE "deleted_at" IS NOT NULL AND "purged_at" IS NULL;
