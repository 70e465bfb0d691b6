import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';

import { openApiDocument } from '../../functions/api/openapi.js';
import { API_ROUTES } from '../../functions/contract/topology.js';

describe('Document: OpenAPI 3.1', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    // Act
    const result = await new Validator().validate(structuredClone(openApiDocument));

    // Assess
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('describes every route the api serves, and no other', () => {
    // Act
    const described = Object.entries(openApiDocument.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );

    // Assess
    expect(described.sort()).toEqual([...API_ROUTES].sort());
  });

  it('is committed as docs/openapi.json exactly as the schemas generate it (run npm run openapi after changing them)', async () => {
    // Act
    const committed = JSON.parse(
      await readFile(join(import.meta.dirname, '../../docs/openapi.json'), 'utf8'),
    ) as unknown;

    // Assess
    expect(committed).toEqual(JSON.parse(JSON.stringify(openApiDocument)));
  });
});
