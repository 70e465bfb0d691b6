import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

// Built from parts so this file does not match itself.
const hidden = new RegExp(
  `\\b(?:(?:it|test|describe)\\.(?:${['skip', 'only', 'todo'].join('|')})|x(?:it|describe))\\(`,
);

describe('Suite: hygiene', () => {
  it('has no skipped, focused or placeholder tests, which would hide failures', () => {
    // Act
    const offenders = testFiles(root).flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, index) => (hidden.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])),
    );

    // Assess
    expect(offenders).toEqual([]);
  });
});
