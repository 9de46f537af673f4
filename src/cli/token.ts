// `npm run token -- <userId> [name]`: prints a bearer token for exploring in GraphiQL.
// `npm run token -- --service <name>`: prints a service credential for the product's service `name`.
import { createAuth, parseSubject } from '../auth/jwt.js';
import { loadConfig } from '../config.js';

const USAGE = `usage: npm run token -- <userId> [name]   (userId: a positive integer below 2^53)
       npm run token -- --service <name>     (needs SERVICE_SECRET)`;
const args = process.argv.slice(2);
const config = loadConfig();
const auth = createAuth(config.jwtSecret, config.tokenRules, config.serviceSecret);

if (args[0] === '--service') {
  try {
    console.log(await auth.signService(args[1] ?? ''));
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
} else {
  const [rawId, ...nameParts] = args;
  const userId = parseSubject(rawId);
  if (userId === null) {
    console.error(USAGE);
    process.exit(2);
  }
  const name = nameParts.join(' ');
  console.log(await auth.sign(userId, name ? { name } : {}));
}
