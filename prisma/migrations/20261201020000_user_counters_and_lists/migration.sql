-- Follows are relation facts (kind 'follow', entity 'user'); the early table never held data.
DROP TABLE "follows";

-- AlterTable
ALTER TABLE "users" ADD COLUMN "likes_public" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "user_counters" (
    "user_id" BIGINT NOT NULL,
    "followings" INTEGER NOT NULL DEFAULT 0,
    "followers" INTEGER NOT NULL DEFAULT 0,
    "posts" INTEGER NOT NULL DEFAULT 0,
    "likes_received" INTEGER NOT NULL DEFAULT 0,
    "favs_received" INTEGER NOT NULL DEFAULT 0,
    "version" BIGINT NOT NULL DEFAULT 1,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "user_counters_pkey" PRIMARY KEY ("user_id")
);

-- Lists page newest first with a tie-break, straight off these indexes.
DROP INDEX "relation_facts_entity_type_entity_id_kind_active_updated_at_idx";
DROP INDEX "relation_facts_user_id_kind_active_updated_at_idx";

-- CreateIndex
CREATE INDEX "relation_facts_entity_type_entity_id_kind_active_updated_at_user_id_idx" ON "relation_facts"("entity_type", "entity_id", "kind", "active", "updated_at" DESC, "user_id" DESC);

-- CreateIndex
CREATE INDEX "relation_facts_user_id_kind_active_updated_at_entity_id_idx" ON "relation_facts"("user_id", "kind", "active", "updated_at" DESC, "entity_id" DESC);

-- Counters of the data that exists already.
INSERT INTO "user_counters" ("user_id", "followings", "followers", "posts", "likes_received", "favs_received")
SELECT u.id,
       (SELECT count(*) FROM relation_facts f WHERE f.user_id = u.id AND f.kind = 'follow' AND f.active),
       (SELECT count(*) FROM relation_facts f WHERE f.entity_type = 'user' AND f.entity_id = u.id AND f.kind = 'follow' AND f.active),
       (SELECT count(*) FROM posts p WHERE p.author_id = u.id AND p.deleted_at IS NULL),
       (SELECT count(*) FROM relation_facts f JOIN posts p ON f.entity_type = 'post' AND p.id = f.entity_id WHERE p.author_id = u.id AND f.kind = 'like' AND f.active),
       (SELECT count(*) FROM relation_facts f JOIN posts p ON f.entity_type = 'post' AND p.id = f.entity_id WHERE p.author_id = u.id AND f.kind = 'fav' AND f.active)
FROM users u;
