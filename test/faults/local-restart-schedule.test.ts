/**
 * Local mode killed with SIGKILL while a schedule fires every 2 s: its chain is on disk, and
 * after the restart it goes on with no occurrence skipped or doubled.
 */

import { describe, expect, it } from 'vitest';

import { eventually } from '../support/webhook-receiver.js';
import { killedLocalMode, startLocalMode, startOnFreePort } from './local-process.js';

const local = killedLocalMode('restart-schedule', { '/every-2s': () => 200 });

describe('Faults: local mode killed with SIGKILL', () => {
  it('keeps a schedule firing across a SIGKILL, with no occurrence skipped or doubled', async () => {
    // Prepare: a schedule every 2 s, with a few occurrences delivered before the kill.
    const { port, child, api, headers } = await startOnFreePort(local);
    const created = await fetch(`${api}/v1/schedules`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ rate: '2 seconds', target: { type: 'http', url: local.receiver.url('/every-2s') } }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const receipts = () => local.receiver.receipts.filter((receipt) => receipt.body.scheduleId === id);
    const occurrenceTimes = () => [...new Set(receipts().map((receipt) => Date.parse(receipt.body.occurrence ?? '')))];
    await eventually('three occurrences before the kill', () => occurrenceTimes().length >= 3, 80, 250);

    // Act: kill it between occurrences, wait more than an interval, start it again.
    child.kill('SIGKILL');
    const killedAtMs = Date.now();
    const beforeKill = occurrenceTimes().length;
    await new Promise((resolve) => setTimeout(resolve, 3000));
    local.child = await startLocalMode(port, local.dataDir);
    // An occurrence the kill cut short mid-attempt holds its 60 s lease first, as any task does.
    await eventually(
      'occurrences well past the kill',
      () => Math.max(...occurrenceTimes()) > killedAtMs + 10_000,
      400,
      250,
    );
    await fetch(`${api}/v1/schedules/${id}`, { method: 'DELETE', headers });

    // Assess: every occurrence from the first to the last, each under one task id, none early.
    const times = occurrenceTimes().sort((a, b) => a - b);
    const first = times[0] ?? 0;
    const expected = Array.from({ length: times.length }, (_, index) => first + index * 2000);
    const idsByTime = new Map<number, Set<string>>();
    for (const receipt of receipts()) {
      const atMs = Date.parse(receipt.body.occurrence ?? '');
      idsByTime.set(atMs, (idsByTime.get(atMs) ?? new Set()).add(receipt.body.id));
    }
    const doubled = [...idsByTime.values()].filter((ids) => ids.size > 1);
    const early = receipts().filter((receipt) => receipt.receivedAtMs < Date.parse(receipt.body.occurrence ?? ''));
    console.log(
      `fault "local process SIGKILLed with a schedule every 2 s": ${times.length} occurrences (${beforeKill} before the kill), skipped ${expected.filter((at) => !idsByTime.has(at)).length}, doubled ${doubled.length}, duplicate deliveries ${receipts().length - times.length}, early ${early.length}`,
    );
    expect(times).toEqual(expected);
    expect(doubled).toEqual([]);
    expect(early).toEqual([]);
  }, 180_000);
});
