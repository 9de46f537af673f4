// Users in PostgreSQL. Ids come from the JWT `sub`, so rows are created on first sight.
import { LRUCache } from 'lru-cache';
import type { Db } from './client.js';

export interface UserModel {
  id: number;
  name: string | null;
  likesPublic: boolean;
  createdAt: Date;
}

export const toUser = (row: { id: bigint; name: string | null; likesPublic: boolean; createdAt: Date }): UserModel => ({
  id: Number(row.id),
  name: row.name,
  likesPublic: row.likesPublic,
  createdAt: row.createdAt,
});

export function createUserStore(db: Db) {
  // The name last written per user, so an authenticated request costs no SQL after the
  // first one; a token carrying a different name is written through.
  const stored = new LRUCache<number, { name: string | null }>({ max: 100_000 });

  return {
    /**
     * Creates the user on first sight and keeps the name in step with the token's claim;
     * false for an erased user, who is never created again (their token outlived them).
     */
    async ensure(id: number, name: string | null): Promise<boolean> {
      const known = stored.get(id);
      if (known && (name === null || name === known.name)) return true;
      // One atomic statement: concurrent first requests of a user must not race an upsert.
      const [row] = await db.$queryRaw<{ name: string | null }[]>`
        INSERT INTO users (id, name)
          SELECT ${id}, ${name} WHERE NOT EXISTS (SELECT 1 FROM erasures WHERE user_id = ${id})
        ON CONFLICT (id) DO UPDATE
          SET name = COALESCE(EXCLUDED.name, users.name),
              updated_at = CASE WHEN EXCLUDED.name IS DISTINCT FROM users.name AND EXCLUDED.name IS NOT NULL
                                THEN now() ELSE users.updated_at END
        RETURNING name`;
      if (!row) return false;
      stored.set(id, { name: row.name });
      return true;
    },

    /** Forgets what this process knows of a user (their erasure started). */
    forget(id: number): void {
      stored.delete(id);
    },

    async updateProfile(id: number, changes: { likesPublic?: boolean }): Promise<UserModel> {
      return toUser(await db.user.update({ where: { id }, data: changes }));
    },

    async byIds(ids: readonly number[]): Promise<UserModel[]> {
      const rows = await db.user.findMany({ where: { id: { in: [...ids] } } });
      return rows.map(toUser);
    },
  };
}

export type UserStore = ReturnType<typeof createUserStore>;
