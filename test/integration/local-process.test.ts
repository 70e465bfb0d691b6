import { describe, expect, it } from 'vitest';

import { startLocalProcess } from '../../lib/local/local-process.js';

const supportUrl = new URL('../support/', import.meta.url).href;

describe('Function: startLocalProcess', () => {
  it('reports what the child said when it was ready, and fails a question the child exits without answering', async () => {
    // Act
    const child = await startLocalProcess<string>(supportUrl + 'answer-then-exit.ts', 'answer-then-exit', []);
    const asked = child.ask();

    // Assess
    expect(child.ready).toBe('ready');
    await expect(asked).rejects.toThrow('answer-then-exit exited (3) before it answered');
    await expect(child.ask()).rejects.toThrow('answer-then-exit is no longer running');
  });
});
