// `npm run token -- <userId> [name]`: prints a bearer token for exploring in GraphiQL.
import { createAuth, parseSubject } from '../auth/jwt.js';
import { loadConfig } from '../config.js';

const [rawId, ...nameParts] = process.argv.slice(2);
const userId = parseSubject(rawId);
if (userId === null) {
  console.error('usage: npm run token -- <userId> [name]   (userId: a positive integer below 2^53)');
  process.exit(2);
}
const config = loadConfig();
const auth = createAuth(config.jwtSecret, config.tokenRules);
const name = nameParts.join(' ');
console.log(await auth.sign(userId, name ? { name } : {}));
