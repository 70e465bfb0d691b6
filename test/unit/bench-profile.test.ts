import { describe, expect, it } from 'vitest';

import { type CpuProfile, groupOfUrl, summarizeProfiles } from '../../bench/profile.js';

const ROOT = '/repo';
const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url, lineNumber: 9 },
  children,
});

/** root → SDK's deserializer → JSON.parse (native); root → GC; root → idle; root → a handler. */
const handlersProfile = (samples: number[]): CpuProfile => ({
  nodes: [
    frame(1, '(root)', '', [2, 4, 5, 6]),
    frame(2, 'de', 'file:///repo/node_modules/@smithy/core/index.js', [3]),
    frame(3, 'parse', ''),
    frame(4, '(garbage collector)', ''),
    frame(5, '(idle)', ''),
    frame(6, 'deliverTask', 'file:///repo/functions/core/deliver.ts'),
  ],
  startTime: 1000,
  endTime: 1000 + (samples.length + 1) * 1000,
  samples,
  timeDeltas: samples.map(() => 1000),
});

describe('Function: groupOfUrl', () => {
  it('tells the SDK, the emulators, HTTP, other libraries, the project and Node apart by script', () => {
    expect(groupOfUrl('file:///repo/node_modules/@aws-sdk/client-sqs/dist-cjs/index.js')).toBe('SDK');
    expect(groupOfUrl('file:///repo/node_modules/@smithy/smithy-client/dist-cjs/index.js')).toBe('SDK');
    expect(groupOfUrl('file:///repo/node_modules/dynalite/index.js')).toBe('emulator');
    expect(groupOfUrl('file:///repo/node_modules/level-transcoder/lib/formats.js')).toBe('emulator');
    expect(groupOfUrl('node:_http_client')).toBe('HTTP');
    expect(groupOfUrl('node:internal/deps/undici/undici')).toBe('HTTP');
    expect(groupOfUrl('file:///repo/node_modules/zod/v4/core/parse.js')).toBe('other libraries');
    expect(groupOfUrl('file:///repo/functions/callback/app.ts')).toBe('project');
    expect(groupOfUrl('node:internal/process/task_queues')).toBe('Node and V8');
  });
});

describe('Function: summarizeProfiles', () => {
  it("charges a native frame to its caller's group, leaves idle out, and counts only the window", () => {
    // Prepare: samples at 2, 3, 4, 5, 6, 7 ms; the window takes the four from 3 to 6 ms.
    const profile = handlersProfile([6, 3, 3, 4, 5, 2]);

    // Act
    const summary = summarizeProfiles([{ process: 'handlers', profile }], { fromUs: 3000, toUs: 6000 }, ROOT);

    // Assess: JSON.parse under the SDK is the SDK's; the idle sample is no CPU.
    expect(summary.totalMs).toBe(3);
    expect(summary.byGroup).toEqual([
      { group: 'SDK', ms: 2, share: 2 / 3 },
      { group: 'GC', ms: 1, share: 1 / 3 },
    ]);
    expect(summary.top[0]).toEqual({ frame: 'handlers parse (native)', group: 'SDK', ms: 2, share: 2 / 3 });
  });

  it("counts every sample of an emulator's process as the emulator's, and names frames by their place in the repository", () => {
    // Act
    const summary = summarizeProfiles(
      [
        { process: 'emulator', profile: handlersProfile([4, 2]) },
        { process: 'handlers', profile: handlersProfile([6, 6]) },
      ],
      { fromUs: 0, toUs: 10_000 },
      ROOT,
    );

    // Assess
    expect(summary.byProcess).toEqual({ handlers: 2, emulator: 2 });
    expect(summary.byGroup).toEqual([
      { group: 'emulator', ms: 2, share: 0.5 },
      { group: 'project', ms: 2, share: 0.5 },
    ]);
    expect(summary.top[0]?.frame).toBe('handlers deliverTask functions/core/deliver.ts:10');
  });
});
