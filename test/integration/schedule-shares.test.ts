/**
 * The schedule store on dynalite: a tenant's schedules spread over the shares of its schedule
 * partition, and a schedule stored before the shares (in the tenant's one old partition) is still
 * read, listed, counted, changed in place and deleted.
 */
import { GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';

import { DynamoScheduleStore } from '../../functions/adapters/dynamo/schedule-store.js';
import {
  SCHEDULE_SHARES,
  scheduleKey,
  SCHEDULES_LEGACY,
  scheduleToItem,
} from '../../functions/adapters/dynamo/table-schema.js';
import { aSchedule, first, second } from '../contracts/schedule-store.contract.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';

const emulators = emulatorsFixture();

const idOf = (index: number) => `sch_${String(index).padStart(20, '0')}`;

async function storeOnNewTable() {
  const tableName = await emulators.newTable();
  return { tableName, store: new DynamoScheduleStore({ client: emulators.dynamo, tableName }) };
}

describe('Schedule partitions', () => {
  it("spreads a tenant's schedules over every share of its schedule partition", async () => {
    // Prepare
    const { tableName, store } = await storeOnNewTable();

    // Act
    for (let index = 0; index < 64; index += 1) await store.create(aSchedule({ id: idOf(index) }));

    // Assess
    const { Items = [] } = await emulators.dynamo.send(new ScanCommand({ TableName: tableName }));
    const perPartition = new Map<string, number>();
    for (const item of Items) perPartition.set(String(item.pk), (perPartition.get(String(item.pk)) ?? 0) + 1);
    expect([...perPartition.keys()].sort()).toEqual(
      Array.from({ length: SCHEDULE_SHARES }, (_, share) => `SCHEDULES#acme#${share}`).sort(),
    );
    expect(Math.max(...perPartition.values())).toBeLessThan(64 / 2);
  });

  it('reads, lists, counts, advances, replaces and deletes a schedule stored before the shares, where it is', async () => {
    // Prepare: one schedule at the old key, written as an earlier version wrote it, and one new.
    const { tableName, store } = await storeOnNewTable();
    const old = aSchedule({ id: idOf(1) });
    const oldKey = scheduleKey('acme', old.id, SCHEDULES_LEGACY);
    expect(oldKey.pk).toBe('SCHEDULES#acme');
    await emulators.dynamo.send(new PutCommand({ TableName: tableName, Item: { ...scheduleToItem(old), ...oldKey } }));
    await store.create(aSchedule({ id: idOf(2) }));

    // Act and assess: read, listed and counted beside the new one.
    expect(await store.get('acme', old.id)).toEqual(old);
    expect((await store.page('acme', 10)).schedules.map((schedule) => schedule.id)).toEqual([idOf(1), idOf(2)]);
    expect(await store.count('acme')).toBe(2);

    // Advanced and replaced in place: still one item, at the old key.
    expect(await store.advance('acme', old.id, 'r0', first.taskId, second)).toBe(true);
    expect(await store.advance('acme', old.id, 'r0', first.taskId, second)).toBe(false);
    const changed = { ...old, revision: 'r1', payloadJson: '{"v":2}', next: second, advancedFrom: first.taskId };
    expect(await store.replace(changed, { revision: 'r0', nextTaskId: second.taskId })).toBe(true);
    const stored = await emulators.dynamo.send(new GetCommand({ TableName: tableName, Key: oldKey }));
    expect(stored.Item).toMatchObject({ revision: 'r1', payloadJson: '{"v":2}' });
    expect(await store.count('acme')).toBe(2);

    // Deleted from there.
    expect(await store.delete('acme', old.id)).toEqual(changed);
    expect(await store.get('acme', old.id)).toBeUndefined();
    expect(await store.count('acme')).toBe(1);
  });
});
