-- CreateTable
CREATE TABLE "relation_facts" (
    "user_id" BIGINT NOT NULL,
    "entity_type" VARCHAR(32) NOT NULL,
    "entity_id" BIGINT NOT NULL,
    "kind" VARCHAR(16) NOT NULL,
    "active" BOOLEAN NOT NULL,
    "version" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "relation_facts_pkey" PRIMARY KEY ("user_id","entity_type","entity_id","kind")
);

-- CreateIndex
CREATE INDEX "relation_facts_entity_type_entity_id_kind_active_updated_at_idx" ON "relation_facts"("entity_type", "entity_id", "kind", "active", "updated_at" DESC);

-- CreateIndex
CREATE INDEX "relation_facts_user_id_kind_active_updated_at_idx" ON "relation_facts"("user_id", "kind", "active", "updated_at" DESC);
