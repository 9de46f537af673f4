import type { UserResolvers } from '../generated.js';

export const User: UserResolvers = {
  id: (user) => String(user.id),
};
