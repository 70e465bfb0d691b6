/** The Dynamo adapters on dynalite, each case on a table of its own, held to the contracts their fakes also meet. */
import {} from 'vitest';

import { DynamoBizTypeStore } from '../../functions/adapters/dynamo/biz-type-store.js';
import { DynamoClockStore } from '../../functions/adapters/dynamo/clock-store.js';
import { DynamoIdempotencyStore } from '../../functions/adapters/dynamo/idempotency-store.js';
import { DynamoOccupancyIndex } from '../../functions/adapters/dynamo/occupancy-index.js';
import { DynamoRequestCounter } from '../../functions/adapters/dynamo/request-counter.js';
import { DynamoScheduleStore } from '../../functions/adapters/dynamo/schedule-store.js';
import { DynamoTaskStore } from '../../functions/adapters/dynamo/task-store.js';
import { LeasedRequestCounter } from '../../functions/core/tenants/request-leases.js';
import { bizTypeStoreContract } from '../contracts/biz-type-store.contract.js';
import { clockStoreContract } from '../contracts/clock-store.contract.js';
import { idempotencyStoreContract } from '../contracts/idempotency-store.contract.js';
import { occupancyIndexContract } from '../contracts/occupancy-index.contract.js';
import { rateLimiterContract, requestCounterContract } from '../contracts/request-counter.contract.js';
import { scheduleStoreContract } from '../contracts/schedule-store.contract.js';
import { taskStoreContract } from '../contracts/task-store.contract.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';

const emulators = emulatorsFixture();

const table = async () => ({ client: emulators.dynamo, tableName: await emulators.newTable() });

clockStoreContract('dynamo', async () => new DynamoClockStore(await table()));
taskStoreContract('dynamo', async (bucketCount) => new DynamoTaskStore({ ...(await table()), bucketCount }));
idempotencyStoreContract('dynamo', async () => new DynamoIdempotencyStore(await table()));
occupancyIndexContract('dynamo', async () => new DynamoOccupancyIndex(await table()));
bizTypeStoreContract('dynamo', async () => new DynamoBizTypeStore(await table()));
requestCounterContract('dynamo', async () => new DynamoRequestCounter(await table()));
rateLimiterContract(
  'leased, over dynamo',
  async () => new LeasedRequestCounter(new DynamoRequestCounter(await table())),
);
scheduleStoreContract('dynamo', async () => new DynamoScheduleStore(await table()));
