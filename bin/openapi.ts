/** `npm run openapi`: writes docs/openapi.json from the api's schemas (a test fails while it is stale). */
import { writeFile } from 'node:fs/promises';

import { openApiDocument } from '../functions/api/openapi.js';

export const OPENAPI_FILE = 'docs/openapi.json';

await writeFile(OPENAPI_FILE, `${JSON.stringify(openApiDocument, null, 2)}\n`);
process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
