/**
 * DynamoDB's throughput limits in front of dynalite, divided by a scale model's k. Each
 * partition key (of the table and of each index) may spend at most 1,000 write units and
 * 3,000 read units a second, and the table 40,000 of each; a request over either is
 * answered as AWS answers it, so the SDK's own retries and backoff run.
 *
 * What is modelled: by default every key is its own partition (the best case, reached after
 * DynamoDB splits a hot range); with `partitions` set, keys hash into that many partitions of
 * the table (and as many of each index), and each partition, not each key, gets the per-partition
 * limit, so two hot keys that share one throttle together, as they do in a table of that size.
 * Both in fixed one-second windows with no burst or adaptive capacity. Units
 * follow DynamoDB's rules, with these approximations: a write is charged for the larger of
 * the item before and after it (read from dynalite around the write); a conditional write
 * that fails keeps that charge, as AWS charges for it; a Query is charged for the items it
 * returns, not for those a filter dropped; a request dynalite rejects as invalid keeps its
 * charge.
 *
 * One departure from dividing everything by k: a Query's floor (the unit an empty page costs)
 * counts 1/k against the table's quota, in full against its key. The table's Queries are
 * per-second work whose number does not shrink with the load: a claimed second is read shard
 * by shard, 80 strongly consistent Queries whatever it holds. At full scale those are about
 * 0.2% of the 40,000-unit quota; divided by k they would be a fifth of it, and a scanner
 * catching up five seconds would throttle a model table that AWS would not. Item and batch size limits are dynalite's own (400 KB, 25 writes, 100 keys).
 */
import { createHash } from 'node:crypto';

import { AWS_LIMITS } from '../../../functions/contract/aws-limits.js';
import { TABLE } from '../../../functions/contract/topology.js';
import type { Clock } from '../../../functions/core/kernel/task.js';
import type { EnvironmentInContext } from '../lambda-service.js';
import {
  itemKeyText,
  keyClass,
  type KeySchema,
  partitionId,
  type PartitionKeyRef,
  partitionRef,
  type WireItem,
} from './dynamodb-capacity.js';
import { scaledRate } from './scaled-rate.js';
import { WindowMeter } from './window-meter.js';

/** The task table's keys, as the stack and the local runtime create it. */
export const TASK_TABLE_SCHEMA: KeySchema = {
  partitionKey: TABLE.partitionKey,
  sortKey: TABLE.sortKey,
  indexes: Object.values(TABLE.indexes),
};

export interface DynamoThroughputOptions {
  /** The scale model's divisor of AWS's rates. */
  readonly k: number;
  readonly clock: Pick<Clock, 'now'>;
  /** @default TASK_TABLE_SCHEMA */
  readonly schema?: KeySchema;
  /** The table's on-demand write quota, before k divides it. @default AWS_LIMITS.dynamodb.tableWriteUnitsPerSecond */
  readonly tableWriteUnitsPerSecond?: number;
  /** The table's on-demand read quota, before k divides it. @default AWS_LIMITS.dynamodb.tableReadUnitsPerSecond */
  readonly tableReadUnitsPerSecond?: number;
  /**
   * How many partitions the table has (see `tablePartitions`); keys hash into them and share
   * each one's limit. @default every key its own partition
   */
  readonly partitions?: number;
  /**
   * Whether keys of SHARD_KEY_CLASSES are held to their limit. A 1/k model above k = 10 puts a
   * handful of tasks on each (the design's shard count is not divided by k), so what one takes in
   * a second is noise; there they are metered, and what went over their limit is counted apart
   * (`KeyClassUsage.overLimit`), not refused. @default true
   */
  readonly shardKeysLimited?: boolean;
}

/** DynamoDB splits a partition past 10 GB of items... */
const PARTITION_BYTES = 10 * 1024 ** 3;

/**
 * How many partitions DynamoDB gives a table: enough for its size at 10 GB each, and enough for
 * its throughput at 1,000 write and 3,000 read units each, whichever needs more. A table keeps
 * the partitions it once had, so a table sized for a billion tasks a day kept 30 days has some
 * 3,000, whatever share of its throughput one second uses.
 */
export function tablePartitions(table: {
  readonly bytes: number;
  readonly writeUnitsPerSecond: number;
  readonly readUnitsPerSecond: number;
}): number {
  const { partitionWriteUnitsPerSecond, partitionReadUnitsPerSecond } = AWS_LIMITS.dynamodb;
  const forThroughput =
    table.writeUnitsPerSecond / partitionWriteUnitsPerSecond + table.readUnitsPerSecond / partitionReadUnitsPerSecond;
  return Math.max(1, Math.ceil(table.bytes / PARTITION_BYTES), Math.ceil(forThroughput));
}

/** Partitions that two or more keys used in the same second, in partition mode. */
export interface PartitionCollisions {
  readonly partitions: number;
  /** The busiest partition's peak second as a fraction of its limit: at or above the hottest key's. */
  readonly hottestFractionOfLimit: number;
  /** The same, counting only keys outside SHARD_KEY_CLASSES. */
  readonly hottestUnshardedFractionOfLimit: number;
  /** Partition-seconds in which two or more keys spent units. */
  readonly sharedSeconds: number;
  /** The most keys that spent units in one partition in one second, and the most units such a shared partition took. */
  readonly mostKeysInOneSecond: number;
  readonly peakSharedUnitsPerSecond: number;
  /** The partition whose shared second was busiest, and its keys then. */
  readonly busiestShared?: { readonly kind: Kind; readonly keys: readonly string[] };
}

type Kind = 'read' | 'write';

export interface Charge {
  readonly ref: PartitionKeyRef;
  readonly units: number;
  /** A per-request floor that does not grow with the load: counted 1/k against the table. */
  readonly floor?: boolean;
  /** Set when the units are what an environment asks once (see `meterFor`). */
  readonly once?: Once;
}

/** What an environment asks once: in its start, or in a first read of something, unless it reads it again. */
interface Once {
  readonly environment: string;
  /** The first read's `<environment>|<item or key>`, for one made after the start. */
  readonly firstRead?: string;
}

interface KeyUnits {
  readonly kind: Kind;
  readonly id: string;
  readonly units: number;
  readonly nowMs: number;
}

/** An environment's first read of an item or key after its start, held apart until it is read again, or the run ends. */
interface FirstRead {
  readonly environment: string;
  repeated: boolean;
  readonly keys: KeyUnits[];
  readonly items: Array<{ readonly id: string; readonly units: number; readonly nowMs: number }>;
}

/** Units per id per second over the whole run, so that units found to belong to a past second can still join it. */
class SecondTally {
  private readonly seconds = new Map<string, Map<number, number>>();

  add(id: string, units: number, nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    const byId = this.seconds.get(id) ?? new Map<number, number>();
    this.seconds.set(id, byId.set(second, (byId.get(second) ?? 0) + units));
  }

  /** Each id's busiest second, with `extra` added in the seconds it fell in. */
  peaks(extra: ReadonlyArray<{ readonly id: string; readonly units: number; readonly nowMs: number }>) {
    const all = new SecondTally();
    for (const [id, byId] of this.seconds) all.seconds.set(id, new Map(byId));
    for (const { id, units, nowMs } of extra) all.add(id, units, nowMs);
    return new Map([...all.seconds].map(([id, byId]) => [id, Math.max(...byId.values())]));
  }
}

/** What the proxy meters one request with: the model, as the execution environment that made it meets it (see `meterFor`). */
export interface RequestMeter {
  readonly schema: KeySchema;
  admit(kind: Kind, table: string, charges: readonly Charge[], unkeyedUnits?: number): Refusal | undefined;
  topUp(kind: Kind, table: string, charges: readonly Charge[], unkeyedUnits?: number): void;
  itemRequested(kind: Kind, table: string, key: WireItem): void;
}

export interface KeyClassUsage {
  /** Distinct partition keys of this class seen. */
  readonly keys: number;
  readonly requests: number;
  readonly readUnits: number;
  readonly writeUnits: number;
  readonly throttles: number;
  /** Requests over their key's limit that were not refused (see `shardKeysLimited`). */
  readonly overLimit: number;
}

export interface HottestKey extends PartitionKeyRef {
  readonly kind: Kind;
  readonly peakUnitsPerSecond: number;
  /** The peak as a fraction of the (scaled) per-partition limit; 1 means the key hit the limit. */
  readonly fractionOfLimit: number;
}

/** The item asked for most often in one second: no item's request rate may grow with the load (invariant 8). */
export interface HottestItem {
  readonly table: string;
  /** `pk` or `pk / sk`. */
  readonly key: string;
  /** Gets, writes and batch entries on the item in its busiest second, throttled or not. */
  readonly peakRequestsPerSecond: number;
}

export interface DynamoThroughputReport {
  readonly limits: Readonly<Record<'partitionRead' | 'partitionWrite' | 'tableRead' | 'tableWrite', number>>;
  /** By key class: the kind of item the key names (table-schema's partitionKind), or `index:<name>` for an index's keys. */
  readonly byKeyClass: Readonly<Record<string, KeyClassUsage>>;
  readonly hottestKey: HottestKey | undefined;
  readonly hottestItem: HottestItem | undefined;
  /**
   * By key class (as `byKeyClass`), the most requests one item of the class took in one second,
   * leaving out what environments ask once (see `meterFor`): what must not grow with the load for
   * any class whose items are not one per task.
   */
  readonly hottestItemByClass: Readonly<Record<string, number>>;
  /** By key class, the most units one partition key of the class spent in one second, by kind, leaving out environments' starts as above. */
  readonly hottestKeyByClass: Readonly<Record<string, Readonly<Record<Kind, number>>>>;
  /**
   * By key class, the most units one partition key of the class took per execution environment
   * start, by kind: what environments asked once (see `meterFor`) spent on it, divided by the
   * environments of each function that started, summed over the functions. Lambda adds at most
   * so many environments a second per function, so this bounds what starts cost at any scale.
   */
  readonly unitsPerStartByClass: Readonly<Record<string, Readonly<Record<Kind, number>>>>;
  /** Execution environments that asked DynamoDB anything once, by function. */
  readonly startsByFunction: Readonly<Record<string, number>>;
  /** Requests refused for the table's own limit rather than one key's, by kind. */
  readonly tableThrottles: Readonly<Record<Kind, number>>;
  /** The most units the table spent in any one second, by kind, against `limits.tableRead` and `limits.tableWrite`. */
  readonly tablePeakUnitsPerSecond: Readonly<Record<Kind, number>>;
  /** In partition mode, how often keys shared a partition; undefined when every key is its own. */
  readonly collisions?: PartitionCollisions;
}

/** One partition's keys in its current second, to find two keys sharing a partition. */
interface PartitionSecond {
  second: number;
  keys: Map<string, number>;
}

type Refusal = 'partition' | 'table';

/**
 * Key classes spread over a count the design fixes: one key per task shard and second (the tasks'
 * buckets, and the byBizType index, keyed by the task's shard), and one per schedule share of a
 * tenant (8). What one takes in a second is set by that count, which a 1/k model does not divide,
 * against a limit it does: at 1/100 a handful of tasks or schedules falls on each, and one more in
 * a second is a tenth of its limit. Their counts mean something at k ≤ 10 only; beyond it the
 * partitions are also judged without them (PartitionCollisions).
 */
export const SHARD_KEY_CLASSES: ReadonlySet<string> = new Set(['B', 'index:byBizType', 'SCHEDULES']);

/** A partition key's class: the text before its first '#', or `index:<name>` for an index's keys. */
function classOf(id: string): string {
  return classOfRef(partitionRef(id));
}

function classOfRef(ref: PartitionKeyRef): string {
  return ref.index === undefined ? keyClass(ref.value) : `index:${ref.index}`;
}

/** The meters and the admission rule, apart from HTTP so the arithmetic can be read (and tested) on its own. */
export class DynamoThroughputModel {
  private readonly keys: Record<Kind, WindowMeter>;
  private readonly tables: Record<Kind, WindowMeter>;
  /** Requests per item, unlimited: what is measured is how often one item is asked for. */
  private readonly items = new WindowMeter(Number.POSITIVE_INFINITY);
  /** The same, and the keys' units by kind, less what environments ask once (see `meterFor`). */
  private readonly itemLoad = new SecondTally();
  private readonly keyLoad: Record<Kind, SecondTally> = { read: new SecondTally(), write: new SecondTally() };
  /** Units environments spent while starting. */
  private readonly startUnits: Array<KeyUnits & { readonly environment: string }> = [];
  /** `<environment>|<item or key>` for each item and key an environment has read, and its first read after its start. */
  private readonly readBefore = new Set<string>();
  private readonly firstReads = new Map<string, FirstRead>();
  /** In partition mode, the partitions' meters, which hold the limit, and each one's keys this second. */
  private readonly partitions?: Record<Kind, WindowMeter>;
  /** The partitions again, charged only by keys outside SHARD_KEY_CLASSES. */
  private readonly unshardedPartitions?: Record<Kind, WindowMeter>;
  private readonly partitionSeconds = new Map<string, PartitionSecond>();
  /** By key class, requests over their key's limit that were let through (see `shardKeysLimited`). */
  private readonly overLimit = new Map<string, number>();
  private collisions = {
    sharedSeconds: 0,
    mostKeysInOneSecond: 0,
    peakSharedUnitsPerSecond: 0,
    busiestShared: undefined as PartitionCollisions['busiestShared'],
  };

  constructor(private readonly options: DynamoThroughputOptions) {
    const { k } = options;
    const limits = AWS_LIMITS.dynamodb;
    this.keys = {
      read: new WindowMeter(scaledRate(limits.partitionReadUnitsPerSecond, k)),
      write: new WindowMeter(scaledRate(limits.partitionWriteUnitsPerSecond, k)),
    };
    if (options.partitions !== undefined) {
      this.partitions = {
        read: new WindowMeter(this.keys.read.limit),
        write: new WindowMeter(this.keys.write.limit),
      };
      this.unshardedPartitions = {
        read: new WindowMeter(this.keys.read.limit),
        write: new WindowMeter(this.keys.write.limit),
      };
    }
    this.tables = {
      read: new WindowMeter(scaledRate(options.tableReadUnitsPerSecond ?? limits.tableReadUnitsPerSecond, k)),
      write: new WindowMeter(scaledRate(options.tableWriteUnitsPerSecond ?? limits.tableWriteUnitsPerSecond, k)),
    };
  }

  get schema(): KeySchema {
    return this.options.schema ?? TASK_TABLE_SCHEMA;
  }

  /**
   * Admits a request whose charges all fit this second, charging them, or refuses it. Units
   * on the table's own keys (not its indexes') and `unkeyedUnits` (a Scan) count toward the table.
   */
  admit(kind: Kind, table: string, charges: readonly Charge[], unkeyedUnits = 0): Refusal | undefined {
    const now = this.options.clock.now();
    const keys = this.keys[kind];
    const tableUnits = unkeyedUnits + charges.reduce((sum, charge) => sum + this.tableShare(charge), 0);
    const shardKeysLimited = this.options.shardKeysLimited ?? true;
    const limited = shardKeysLimited
      ? charges
      : charges.filter((charge) => !SHARD_KEY_CLASSES.has(classOfRef(charge.ref)));
    const partitions = shardKeysLimited ? this.partitions : this.unshardedPartitions;
    const over = limited.find(
      (charge) =>
        !keys.fits(partitionId(charge.ref), charge.units, now) ||
        !(partitions?.[kind].fits(this.partitionOf(charge.ref), this.unitsInPartition(limited, charge), now) ?? true),
    );
    if (over) {
      keys.throttled(partitionId(over.ref), now);
      return 'partition';
    }
    if (!this.tables[kind].fits(table, tableUnits, now)) {
      this.tables[kind].throttled(table, now);
      return 'table';
    }
    for (const charge of charges) {
      if (!limited.includes(charge) && !keys.fits(partitionId(charge.ref), charge.units, now)) {
        const name = classOfRef(charge.ref);
        this.overLimit.set(name, (this.overLimit.get(name) ?? 0) + 1);
      }
      this.chargeKey(kind, charge, now, 1);
    }
    this.tables[kind].charge(table, tableUnits, now);
    return undefined;
  }

  /** The partition a key hashes into, in partition mode: the table's own and each index's partitions apart. */
  private partitionOf(ref: PartitionKeyRef): string {
    const count = this.options.partitions ?? 1;
    const digest = createHash('md5').update(ref.value).digest();
    return `${ref.table}|${ref.index ?? ''}|${digest.readUInt32BE(0) % count}`;
  }

  /** What one request's charges put on the partition `charge` falls in: its keys may share it. */
  private unitsInPartition(charges: readonly Charge[], charge: Charge): number {
    const partition = this.partitionOf(charge.ref);
    return charges
      .filter((other) => this.partitionOf(other.ref) === partition)
      .reduce((sum, other) => sum + other.units, 0);
  }

  private chargeKey(kind: Kind, charge: Charge, now: number, requests: number): void {
    const id = partitionId(charge.ref);
    this.keys[kind].charge(id, charge.units, now, requests);
    const { once } = charge;
    const units = { kind, id, units: charge.units, nowMs: now };
    if (!once) this.keyLoad[kind].add(id, charge.units, now);
    else if (once.firstRead === undefined) this.startUnits.push({ ...units, environment: once.environment });
    else this.firstRead(once).keys.push(units);
    const meter = this.partitions?.[kind];
    if (!meter) return;
    const partition = this.partitionOf(charge.ref);
    meter.charge(partition, charge.units, now, requests);
    if (!SHARD_KEY_CLASSES.has(classOfRef(charge.ref)))
      this.unshardedPartitions?.[kind].charge(partition, charge.units, now, requests);
    this.noteShared(kind, partition, id, charge.units, now);
  }

  /** Records which keys spent units in a partition this second, and counts a second two or more shared. */
  private noteShared(kind: Kind, partition: string, key: string, units: number, nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    const id = `${kind}|${partition}`;
    let current = this.partitionSeconds.get(id);
    if (!current || current.second !== second) {
      current = { second, keys: new Map() };
      this.partitionSeconds.set(id, current);
    }
    const before = current.keys.size;
    current.keys.set(key, (current.keys.get(key) ?? 0) + units);
    if (current.keys.size < 2) return;
    if (before < 2) this.collisions.sharedSeconds += 1;
    const total = [...current.keys.values()].reduce((sum, spent) => sum + spent, 0);
    this.collisions.mostKeysInOneSecond = Math.max(this.collisions.mostKeysInOneSecond, current.keys.size);
    if (total > this.collisions.peakSharedUnitsPerSecond) {
      this.collisions.peakSharedUnitsPerSecond = total;
      this.collisions.busiestShared = { kind, keys: [...current.keys.keys()].map((text) => partitionRef(text).value) };
    }
  }

  private tableShare(charge: Charge): number {
    if (charge.ref.index !== undefined) return 0;
    return charge.floor ? charge.units / this.options.k : charge.units;
  }

  private firstRead({ environment, firstRead = '' }: Once): FirstRead {
    let read = this.firstReads.get(firstRead);
    if (!read) {
      read = { environment, repeated: false, keys: [], items: [] };
      this.firstReads.set(firstRead, read);
    }
    return read;
  }

  /** Counts one request on one item: a get, a single write, or one entry of a batch. */
  itemRequested(table: string, key: WireItem, once?: Once): void {
    const text = itemKeyText(this.schema, key);
    if (text === undefined) return;
    const now = this.options.clock.now();
    const id = JSON.stringify([table, text]);
    this.items.charge(id, 1, now);
    if (!once) this.itemLoad.add(id, 1, now);
    else if (once.firstRead !== undefined) this.firstRead(once).items.push({ id, units: 1, nowMs: now });
  }

  /**
   * This model as one request from `asker` meets it. What an environment asks once is paid per
   * environment, not per request: all it asks while starting (its init and first invocation), and
   * its first read of an item or partition key that it does not read again in the run (what it
   * keeps: the clock it saw running, a tenant and its key for their cache's 30 s). That is
   * counted per start, apart from the load. A first read the environment repeats was the load
   * all along (an item read per request), and joins it in the second it was made. Writes after
   * the start are the load. An item or key is decided once per request, so a write's or page's
   * top-up follows its admission.
   */
  meterFor(asker: EnvironmentInContext | undefined): RequestMeter {
    const decided = new Map<string, Once | undefined>();
    const onceOf = (kind: Kind, id: string): Once | undefined => {
      if (!asker) return undefined;
      if (!decided.has(id)) decided.set(id, this.asked(asker, kind, id));
      return decided.get(id);
    };
    const tagged = (kind: Kind, charges: readonly Charge[]) =>
      charges.map((charge) => ({ ...charge, once: onceOf(kind, `key ${partitionId(charge.ref)}`) }));
    return {
      schema: this.schema,
      admit: (kind, table, charges, unkeyedUnits) => this.admit(kind, table, tagged(kind, charges), unkeyedUnits),
      topUp: (kind, table, charges, unkeyedUnits) => this.topUp(kind, table, tagged(kind, charges), unkeyedUnits),
      itemRequested: (kind, table, key) =>
        this.itemRequested(table, key, onceOf(kind, `item ${JSON.stringify([table, itemKeyText(this.schema, key)])}`)),
    };
  }

  /** Whether what `asker` asks of an item or key now is asked once (see `meterFor`), and notes a read. */
  private asked(asker: EnvironmentInContext, kind: Kind, id: string): Once | undefined {
    const seen = `${asker.id}|${id}`;
    const readBefore = this.readBefore.has(seen);
    if (kind === 'read') this.readBefore.add(seen);
    if (asker.starting) return { environment: asker.id };
    if (kind === 'write') return undefined;
    if (!readBefore) return { environment: asker.id, firstRead: seen };
    const first = this.firstReads.get(seen);
    if (first) first.repeated = true;
    return undefined;
  }

  /** Charges units learned only after the request ran (an item's size after an update, a page's items). */
  topUp(kind: Kind, table: string, charges: readonly Charge[], unkeyedUnits = 0): void {
    const now = this.options.clock.now();
    let tableUnits = unkeyedUnits;
    for (const charge of charges) {
      if (charge.units <= 0) continue;
      this.chargeKey(kind, charge, now, 0);
      tableUnits += this.tableShare(charge);
    }
    if (tableUnits > 0) this.tables[kind].charge(table, tableUnits, now, 0);
  }

  /**
   * What environments asked once, per start of their function, on each class's busiest key; and
   * the environments that asked anything once, by function.
   */
  private perStart(once: readonly FirstRead[]) {
    const spent = [
      ...this.startUnits,
      ...once.flatMap((read) => read.keys.map((units) => ({ ...units, environment: read.environment }))),
    ];
    const starts = new Map<string, Set<string>>();
    const functionOf = (environment: string) => environment.split(':')[0] ?? '';
    for (const { environment } of spent) {
      const fn = functionOf(environment);
      starts.set(fn, (starts.get(fn) ?? new Set()).add(environment));
    }
    const perKey = new Map<string, number>();
    for (const { kind, id, units, environment } of spent) {
      const key = JSON.stringify([kind, id]);
      perKey.set(key, (perKey.get(key) ?? 0) + units / (starts.get(functionOf(environment))?.size ?? 1));
    }
    const unitsPerStartByClass: Record<string, Record<Kind, number>> = {};
    for (const [key, units] of perKey) {
      const [kind, id = ''] = JSON.parse(key) as [Kind, string];
      const busiest = (unitsPerStartByClass[classOf(id)] ??= { read: 0, write: 0 });
      busiest[kind] = Math.max(busiest[kind], units);
    }
    const startsByFunction = Object.fromEntries([...starts].map(([fn, environments]) => [fn, environments.size]));
    return { unitsPerStartByClass, startsByFunction };
  }

  private hottestPartitionFraction(partitions = this.partitions): number {
    const fractions = (['read', 'write'] as const).flatMap((kind) => {
      const meter = partitions?.[kind];
      return meter ? [...meter.readings().values()].map((reading) => reading.peakUnitsPerSecond / meter.limit) : [];
    });
    return Math.max(0, ...fractions);
  }

  report(): DynamoThroughputReport {
    const byKeyClass: Record<string, { -readonly [P in keyof KeyClassUsage]: number }> = {};
    const keysByClass = new Map<string, Set<string>>();
    let hottestKey: HottestKey | undefined;
    const hottestKeyByClass: Record<string, Record<Kind, number>> = {};
    for (const kind of ['read', 'write'] as const) {
      const meter = this.keys[kind];
      for (const [id, reading] of meter.readings()) {
        const ref = partitionRef(id);
        const name = classOf(id);
        const ids = keysByClass.get(name) ?? new Set<string>();
        keysByClass.set(name, ids.add(id));
        const usage = (byKeyClass[name] ??= {
          keys: 0,
          requests: 0,
          readUnits: 0,
          writeUnits: 0,
          throttles: 0,
          overLimit: this.overLimit.get(name) ?? 0,
        });
        usage.keys = ids.size;
        usage.requests += reading.requests;
        usage.throttles += reading.throttles;
        usage[kind === 'read' ? 'readUnits' : 'writeUnits'] += reading.units;
        const fractionOfLimit = reading.peakUnitsPerSecond / meter.limit;
        if (!hottestKey || fractionOfLimit > hottestKey.fractionOfLimit) {
          hottestKey = { ...ref, kind, peakUnitsPerSecond: reading.peakUnitsPerSecond, fractionOfLimit };
        }
      }
    }
    const firstReads = [...this.firstReads.values()];
    const repeated = firstReads.filter((read) => read.repeated);
    for (const kind of ['read', 'write'] as const) {
      const late = repeated.flatMap((read) => read.keys.filter((units) => units.kind === kind));
      for (const [id, peak] of this.keyLoad[kind].peaks(late)) {
        const hottest = (hottestKeyByClass[classOf(id)] ??= { read: 0, write: 0 });
        hottest[kind] = Math.max(hottest[kind], peak);
      }
    }
    const tableReadings = (kind: Kind) => [...this.tables[kind].readings().values()];
    const throttlesOf = (kind: Kind) => tableReadings(kind).reduce((sum, reading) => sum + reading.throttles, 0);
    const peakOf = (kind: Kind) => Math.max(0, ...tableReadings(kind).map((reading) => reading.peakUnitsPerSecond));
    const tableThrottles = { read: throttlesOf('read'), write: throttlesOf('write') };
    const tablePeakUnitsPerSecond = { read: peakOf('read'), write: peakOf('write') };
    let hottestItem: HottestItem | undefined;
    const hottestItemByClass: Record<string, number> = {};
    for (const [id, peak] of this.itemLoad.peaks(repeated.flatMap((read) => read.items))) {
      const [, key = ''] = JSON.parse(id) as string[];
      const name = keyClass(key.split(' / ')[0] ?? '');
      hottestItemByClass[name] = Math.max(hottestItemByClass[name] ?? 0, peak);
    }
    for (const [id, reading] of this.items.readings()) {
      if (hottestItem && reading.peakUnitsPerSecond <= hottestItem.peakRequestsPerSecond) continue;
      const [table = '', key = ''] = JSON.parse(id) as string[];
      hottestItem = { table, key, peakRequestsPerSecond: reading.peakUnitsPerSecond };
    }
    return {
      limits: {
        partitionRead: this.keys.read.limit,
        partitionWrite: this.keys.write.limit,
        tableRead: this.tables.read.limit,
        tableWrite: this.tables.write.limit,
      },
      byKeyClass,
      hottestKey,
      hottestItem,
      hottestItemByClass,
      hottestKeyByClass,
      ...this.perStart(firstReads.filter((read) => !read.repeated)),
      tableThrottles,
      tablePeakUnitsPerSecond,
      ...(this.options.partitions !== undefined && {
        collisions: {
          partitions: this.options.partitions,
          hottestFractionOfLimit: this.hottestPartitionFraction(),
          hottestUnshardedFractionOfLimit: this.hottestPartitionFraction(this.unshardedPartitions),
          ...this.collisions,
        },
      }),
    };
  }
}
