/** The fakes the unit tests lean on, held to the same contracts as the Dynamo adapters (test/integration/store-contracts.test.ts). */
import { LeasedRequestCounter } from '../../functions/core/tenants/request-leases.js';
import { bizTypeStoreContract } from '../contracts/biz-type-store.contract.js';
import { clockStoreContract } from '../contracts/clock-store.contract.js';
import { idempotencyStoreContract } from '../contracts/idempotency-store.contract.js';
import { occupancyIndexContract } from '../contracts/occupancy-index.contract.js';
import { rateLimiterContract, requestCounterContract } from '../contracts/request-counter.contract.js';
import { scheduleStoreContract } from '../contracts/schedule-store.contract.js';
import { taskStoreContract } from '../contracts/task-store.contract.js';
import {
  FakeBizTypeStore,
  FakeClockStore,
  FakeIdempotencyStore,
  FakeOccupancyIndex,
  FakeRequestCounter,
  FakeScheduleStore,
  FakeTaskStore,
} from './fakes.js';

clockStoreContract('fake', async () => new FakeClockStore());
taskStoreContract('fake', async () => new FakeTaskStore());
idempotencyStoreContract('fake', async () => new FakeIdempotencyStore());
occupancyIndexContract('fake', async () => new FakeOccupancyIndex());
bizTypeStoreContract('fake', async () => new FakeBizTypeStore());
requestCounterContract('fake', async () => new FakeRequestCounter());
rateLimiterContract('leased, over the fake', async () => new LeasedRequestCounter(new FakeRequestCounter()));
scheduleStoreContract('fake', async () => new FakeScheduleStore());
