import { describe, expect, it, vi } from 'vitest';

import { resolvingEachHostOnce, targetProblem } from '../../functions/core/targets/target-rules.js';
import { newTenant } from '../../functions/core/tenants/tenants.js';
import { testTargetRules } from '../support/target-rules.js';

describe('Function: resolvingEachHostOnce', () => {
  it('resolves each host once however many targets name it, and still refuses a private one', async () => {
    // Prepare
    const base = testTargetRules(false);
    const resolveHost = vi.fn(base.resolveHost);
    const rules = resolvingEachHostOnce({ ...base, resolveHost });
    const tenant = newTenant('acme', Date.now());
    const urls = [
      ...Array(5).fill('https://hooks.example.com/a'),
      'https://internal.corp.example/b',
      'https://internal.corp.example/c',
    ];

    // Act
    const problems = await Promise.all(urls.map((url) => targetProblem({ type: 'http', url }, tenant, rules, '')));

    // Assess
    expect(resolveHost.mock.calls.map(([host]) => host).sort()).toEqual(['hooks.example.com', 'internal.corp.example']);
    expect(problems.map((problem) => problem?.path)).toEqual([...Array(5).fill(undefined), 'target.url', 'target.url']);
  });
});
