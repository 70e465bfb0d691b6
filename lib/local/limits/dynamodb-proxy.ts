/**
 * The HTTP edge of the DynamoDB throughput model: reads each DynamoDB JSON request, works
 * out the partition keys it touches and the units it costs, and forwards it to dynalite or
 * answers the throttle AWS would. Batches are admitted item by item, and the items over the
 * limit come back as UnprocessedItems / UnprocessedKeys, as AWS returns them.
 *
 * The sizes AWS bills come from the items themselves, learned with as few extra requests to
 * dynalite as the write allows (each one is time every caller in the model waits on): a put or
 * delete brings back the item it replaced through ReturnValues, an update its result, and a
 * batch's items are read in one BatchGetItem. What a write leaves is remembered, so the next
 * write of the item (a task's delivery lease, then its outcome) needs no read before it: every
 * write the handlers make passes through here, so the image is the item as dynalite holds it.
 * Two writes of one item in flight at once may leave the older image behind; that misprices a
 * later write by at most the difference, never loses or refuses one.
 */
import { ENVIRONMENT_HEADER, parseEnvironmentHeader } from '../lambda-service.js';
import {
  indexWrites,
  itemBytes,
  partitionId,
  type PartitionKeyRef,
  readUnits,
  tablePartition,
  type WireItem,
  type WireValue,
  writeUnits,
} from './dynamodb-capacity.js';
import type { Charge, DynamoThroughputModel, RequestMeter } from './dynamodb-throughput.js';
import {
  jsonError,
  jsonResponse,
  type RunningProxy,
  startJsonProxy,
  type Upstream,
  type WireRequest,
  type WireResponse,
} from './json-proxy.js';

const NAMESPACE = 'com.amazonaws.dynamodb.v20120810';

const refusals = {
  partition: () =>
    jsonError(
      NAMESPACE,
      'ProvisionedThroughputExceededException',
      'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html',
    ),
  table: () =>
    jsonError(
      NAMESPACE,
      'ThrottlingException',
      'Throughput exceeds the current throughput limit for your table. Please contact AWS Support to request a limit increase.',
    ),
} as const;

/** The parts of a DynamoDB request the model reads. */
interface DynamoInput {
  TableName: string;
  Item?: WireItem;
  Key?: WireItem;
  ConsistentRead?: boolean;
  IndexName?: string;
  KeyConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: WireItem;
  KeyConditions?: Record<string, { AttributeValueList?: WireValue[] }>;
  RequestItems?: Record<string, unknown>;
  ReturnValues?: string;
}

/** A write's answer, and the item image its ReturnValues brought back, when the model could ask for one. */
interface ImagedResponse {
  readonly response: WireResponse;
  readonly image?: { readonly item: WireItem | undefined };
}

type WriteRequest = { PutRequest: { Item: WireItem } } | { DeleteRequest: { Key: WireItem } };

interface KeysAndAttributes {
  Keys: WireItem[];
  ConsistentRead?: boolean;
}

const parse = (response: WireResponse): Record<string, unknown> =>
  JSON.parse(response.body.toString('utf8') || '{}') as Record<string, unknown>;

const conditionFailed = (response: WireResponse): boolean =>
  response.status === 400 && String(parse(response).__type).endsWith('#ConditionalCheckFailedException');

const writtenItem = (write: WriteRequest): WireItem | undefined =>
  'PutRequest' in write ? write.PutRequest.Item : undefined;

/** The key a batch entry writes: a put's whole item serves, since only its key attributes are read from it. */
const writtenKey = (write: WriteRequest): WireItem =>
  'PutRequest' in write ? write.PutRequest.Item : write.DeleteRequest.Key;

const sizeOf = (item: WireItem | undefined): number => (item ? itemBytes(item) : 0);

/** The partition key value a Query names, from its key condition (`pk = :v`, `#pk = :v`) or legacy KeyConditions. */
function queriedKey(input: DynamoInput, attribute: string): string | undefined {
  const names = input.ExpressionAttributeNames ?? {};
  const values = input.ExpressionAttributeValues ?? {};
  const expression = input.KeyConditionExpression ?? '';
  for (const [, name = '', placeholder = ''] of expression.matchAll(/([#\w.]+)\s*=\s*(:\w+)/g)) {
    if ((names[name] ?? name) === attribute) return values[placeholder]?.S ?? values[placeholder]?.N;
  }
  const value = input.KeyConditions?.[attribute]?.AttributeValueList?.[0];
  return value?.S ?? value?.N;
}

/** Images remembered at most: a scale run's scenario writes some 20,000 items; older ones are read again. */
const MAX_IMAGES = 100_000;

/** The items the proxy last saw written, by key; `null` is an item known to be absent. */
class ItemImages {
  private readonly images = new Map<string, WireItem | null>();

  get(key: string): WireItem | null | undefined {
    return this.images.get(key);
  }

  set(key: string, item: WireItem | undefined): void {
    this.images.delete(key);
    if (this.images.size >= MAX_IMAGES) this.images.delete(this.images.keys().next().value ?? '');
    this.images.set(key, item ?? null);
  }

  forget(key: string): void {
    this.images.delete(key);
  }
}

/** One request's passage through the model, metered as made by the environment (and start) it names. */
class DynamoThroughputProxy {
  constructor(
    private readonly model: RequestMeter,
    private readonly upstream: Upstream,
    private readonly images: ItemImages,
  ) {}

  private imageKey(table: string, key: WireItem): string {
    return JSON.stringify([table, this.keyOf(key)]);
  }

  private get schema() {
    return this.model.schema;
  }

  private forward(request: WireRequest, payload?: unknown): Promise<WireResponse> {
    const body = payload === undefined ? request.body : Buffer.from(JSON.stringify(payload));
    return this.upstream.send(request.path, request.headers, body);
  }

  private keyOf(item: WireItem): WireItem {
    const { partitionKey, sortKey } = this.schema;
    return Object.fromEntries(
      [partitionKey, sortKey].flatMap((name) => {
        const value = item[name];
        return value === undefined ? [] : [[name, value] as const];
      }),
    );
  }

  /** The item as dynalite holds it now, remembered or read, to learn the sizes AWS would bill for a write. */
  private async currentItem(request: WireRequest, table: string, key: WireItem): Promise<WireItem | undefined> {
    const remembered = this.images.get(this.imageKey(table, key));
    if (remembered !== undefined) return remembered ?? undefined;
    const { json } = await this.upstream.call(request, 'GetItem', { TableName: table, Key: key, ConsistentRead: true });
    const { Item: item } = json as { Item?: WireItem };
    this.images.set(this.imageKey(table, key), item);
    return item;
  }

  /** Items as dynalite holds them now, by their key's JSON, in one BatchGetItem (a batch write has at most 25). */
  private async currentItems(request: WireRequest, table: string, keys: WireItem[]): Promise<Map<string, WireItem>> {
    const found = new Map<string, WireItem>();
    let pending: KeysAndAttributes | undefined = { Keys: keys, ConsistentRead: true };
    while (pending && pending.Keys.length > 0) {
      const { json } = await this.upstream.call(request, 'BatchGetItem', { RequestItems: { [table]: pending } });
      const answer = json as {
        Responses?: Record<string, WireItem[]>;
        UnprocessedKeys?: Record<string, KeysAndAttributes>;
      };
      for (const item of answer.Responses?.[table] ?? []) found.set(JSON.stringify(this.keyOf(item)), item);
      pending = answer.UnprocessedKeys?.[table];
    }
    return found;
  }

  /**
   * Forwards a write asking for `wanted` (ALL_OLD or ALL_NEW) in place of the caller's
   * ReturnValues when the caller asked for none or the same, and answers the caller as it asked.
   */
  private async forwardForImage(request: WireRequest, input: DynamoInput, wanted: string): Promise<ImagedResponse> {
    const asked = input.ReturnValues ?? 'NONE';
    if (asked !== 'NONE' && asked !== wanted) return { response: await this.forward(request) };
    const response = await this.forward(request, asked === wanted ? undefined : { ...input, ReturnValues: wanted });
    if (response.status !== 200) return { response };
    const { Attributes: item, ...rest } = parse(response) as { Attributes?: WireItem };
    return { response: asked === wanted ? response : jsonResponse(200, rest), image: { item } };
  }

  /** Charges what a write turned out to cost beyond what it was admitted on. */
  private settle(table: string, admitted: readonly Charge[], owed: readonly Charge[]): void {
    const paid = new Map(admitted.map((charge) => [partitionId(charge.ref), charge.units]));
    this.model.topUp(
      'write',
      table,
      owed.map((charge) => ({ ref: charge.ref, units: charge.units - (paid.get(partitionId(charge.ref)) ?? 0) })),
    );
  }

  /** The charges of one item write: the item's own partition, and each index it enters, leaves or moves within. */
  private writeCharges(table: string, before: WireItem | undefined, after: WireItem | undefined) {
    const ref = tablePartition(table, this.schema, after ?? before ?? {});
    const own = ref ? [{ ref, units: writeUnits(Math.max(sizeOf(before), sizeOf(after))) }] : [];
    return [...own, ...indexWrites(table, this.schema, before, after).map((index) => ({ ref: index, units: 1 }))];
  }

  async handle(request: WireRequest): Promise<WireResponse> {
    const input = JSON.parse(request.body.toString('utf8') || '{}') as DynamoInput;
    switch (request.operation) {
      case 'PutItem':
      case 'UpdateItem':
      case 'DeleteItem':
        return this.singleWrite(request, input);
      case 'GetItem':
        return this.getItem(request, input);
      case 'Query':
      case 'Scan':
        return this.queryOrScan(request, input);
      case 'BatchWriteItem':
        return this.batchWrite(request, { RequestItems: (input.RequestItems ?? {}) as Record<string, WriteRequest[]> });
      case 'BatchGetItem':
        return this.batchGet(request, {
          RequestItems: (input.RequestItems ?? {}) as Record<string, KeysAndAttributes>,
        });
      default:
        // Table management and transactions (which the service does not use) pass unmetered.
        return this.forward(request);
    }
  }

  private singleWrite(request: WireRequest, input: DynamoInput): Promise<WireResponse> {
    const table = input.TableName;
    const key = input.Item ? this.keyOf(input.Item) : (input.Key ?? {});
    this.model.itemRequested('write', table, key);
    return request.operation === 'UpdateItem'
      ? this.update(request, input, table, key)
      : this.putOrDelete(request, input, table, key);
  }

  /**
   * A put or delete is admitted on what the request names (the new item, or the key alone) and
   * topped up with the item it replaced, which ReturnValues brings back. A conditional write
   * that fails is charged, as AWS charges it, for the larger of the item it met and its own,
   * read after the failure (which left the item as it was).
   */
  private async putOrDelete(request: WireRequest, input: DynamoInput, table: string, key: WireItem) {
    const after = request.operation === 'PutItem' ? input.Item : undefined;
    const admitted = this.writeCharges(table, undefined, after ?? key);
    const refusal = this.model.admit('write', table, admitted);
    if (refusal) return refusals[refusal]();
    const { response, image } = await this.forwardForImage(request, input, 'ALL_OLD');
    if (response.status === 200 || conditionFailed(response)) {
      const before = image ? image.item : await this.currentItem(request, table, key);
      this.settle(table, admitted, this.writeCharges(table, before, after));
    }
    if (response.status === 200) this.images.set(this.imageKey(table, key), after);
    return response;
  }

  /** An update's result is known only after it runs: it is admitted on the item as it stands, then topped up. */
  private async update(request: WireRequest, input: DynamoInput, table: string, key: WireItem) {
    const before = await this.currentItem(request, table, key);
    const admitted = this.writeCharges(table, before, before ?? key);
    const refusal = this.model.admit('write', table, admitted);
    if (refusal) return refusals[refusal]();
    const { response, image } = await this.forwardForImage(request, input, 'ALL_NEW');
    if (response.status === 200) {
      if (image) this.images.set(this.imageKey(table, key), image.item);
      else this.images.forget(this.imageKey(table, key));
      const after = image ? image.item : await this.currentItem(request, table, key);
      this.settle(table, admitted, this.writeCharges(table, before, after));
    }
    return response;
  }

  private async getItem(request: WireRequest, input: DynamoInput): Promise<WireResponse> {
    const table = input.TableName;
    const consistent = input.ConsistentRead === true;
    const ref = tablePartition(table, this.schema, input.Key ?? {});
    if (!ref) return this.forward(request);
    this.model.itemRequested('read', table, input.Key ?? {});
    const minimum = readUnits(0, consistent);
    const refusal = this.model.admit('read', table, [{ ref, units: minimum }]);
    if (refusal) return refusals[refusal]();
    const response = await this.forward(request);
    if (response.status === 200) {
      const item = (parse(response) as { Item?: WireItem }).Item;
      this.model.topUp('read', table, [{ ref, units: readUnits(sizeOf(item), consistent) - minimum }]);
    }
    return response;
  }

  private async queryOrScan(request: WireRequest, input: DynamoInput): Promise<WireResponse> {
    const table = input.TableName;
    const consistent = input.ConsistentRead === true;
    const minimum = readUnits(0, consistent);
    const index = this.schema.indexes.find((candidate) => candidate.name === input.IndexName);
    const value =
      request.operation === 'Query' ? queriedKey(input, index?.partitionKey ?? this.schema.partitionKey) : undefined;
    const ref: PartitionKeyRef | undefined =
      value === undefined ? undefined : { table, value, ...(index && { index: index.name }) };
    // A Scan (or a Query on a key this model cannot read) is metered against the table alone.
    const charge = (units: number, floor = false): [Charge[], number] =>
      ref ? [[{ ref, units, floor }], 0] : [[], units];
    const refusal = this.model.admit('read', table, ...charge(minimum, request.operation === 'Query'));
    if (refusal) return refusals[refusal]();
    const response = await this.forward(request);
    if (response.status === 200) {
      const items = (parse(response) as { Items?: WireItem[] }).Items ?? [];
      const bytes = items.reduce((sum, item) => sum + itemBytes(item), 0);
      this.model.topUp('read', table, ...charge(readUnits(bytes, consistent) - minimum));
    }
    return response;
  }

  private async batchWrite(
    request: WireRequest,
    input: { RequestItems: Record<string, WriteRequest[]> },
  ): Promise<WireResponse> {
    const admitted: Record<string, WriteRequest[]> = {};
    const unprocessed: Record<string, WriteRequest[]> = {};
    let refusal: 'partition' | 'table' | undefined;
    for (const [table, writes] of Object.entries(input.RequestItems ?? {})) {
      const current = await this.currentItems(request, table, writes.map(writtenKey));
      for (const write of writes) {
        const after = writtenItem(write);
        const key = writtenKey(write);
        this.model.itemRequested('write', table, key);
        const before = current.get(JSON.stringify(this.keyOf(key)));
        const refused = this.model.admit('write', table, this.writeCharges(table, before, after));
        refusal ??= refused;
        (refused ? unprocessed : admitted)[table] = [...((refused ? unprocessed : admitted)[table] ?? []), write];
      }
    }
    // AWS throttles a batch as a whole only when it can process none of it.
    if (refusal && Object.keys(admitted).length === 0) return refusals[refusal]();
    const response = await this.forward(request, refusal ? { ...input, RequestItems: admitted } : undefined);
    if (response.status !== 200) return response;
    const answer = parse(response) as { UnprocessedItems?: Record<string, WriteRequest[]> };
    this.rememberWritten(refusal ? admitted : input.RequestItems, answer.UnprocessedItems ?? {});
    if (!refusal) return response;
    for (const [table, writes] of Object.entries(answer.UnprocessedItems ?? {})) {
      unprocessed[table] = [...(unprocessed[table] ?? []), ...writes];
    }
    return jsonResponse(200, { ...answer, UnprocessedItems: unprocessed });
  }

  /** Remembers what a batch left: the items it wrote, less those dynalite left unprocessed (which it did not touch). */
  private rememberWritten(sent: Record<string, WriteRequest[]>, unprocessed: Record<string, WriteRequest[]>): void {
    for (const [table, writes] of Object.entries(sent)) {
      const untouched = new Set((unprocessed[table] ?? []).map((write) => this.imageKey(table, writtenKey(write))));
      for (const write of writes) {
        const key = this.imageKey(table, writtenKey(write));
        if (!untouched.has(key)) this.images.set(key, writtenItem(write));
      }
    }
  }

  private async batchGet(
    request: WireRequest,
    input: { RequestItems: Record<string, KeysAndAttributes> },
  ): Promise<WireResponse> {
    const admitted: Record<string, KeysAndAttributes> = {};
    const unprocessed: Record<string, KeysAndAttributes> = {};
    let refusal: 'partition' | 'table' | undefined;
    for (const [table, request_] of Object.entries(input.RequestItems ?? {})) {
      const minimum = readUnits(0, request_.ConsistentRead === true);
      for (const key of request_.Keys) {
        this.model.itemRequested('read', table, key);
        const ref = tablePartition(table, this.schema, key);
        const refused = ref ? this.model.admit('read', table, [{ ref, units: minimum }]) : undefined;
        refusal ??= refused;
        const into = refused ? unprocessed : admitted;
        into[table] = { ...request_, Keys: [...(into[table]?.Keys ?? []), key] };
      }
    }
    if (refusal && Object.keys(admitted).length === 0) return refusals[refusal]();
    const response = await this.forward(request, refusal ? { ...input, RequestItems: admitted } : undefined);
    if (response.status !== 200) return response;
    const answer = parse(response) as {
      Responses?: Record<string, WireItem[]>;
      UnprocessedKeys?: Record<string, KeysAndAttributes>;
    };
    for (const [table, items] of Object.entries(answer.Responses ?? {})) {
      const consistent = input.RequestItems[table]?.ConsistentRead === true;
      const charges = items.flatMap((item) => {
        const ref = tablePartition(table, this.schema, item);
        return ref ? [{ ref, units: readUnits(itemBytes(item), consistent) - readUnits(0, consistent) }] : [];
      });
      this.model.topUp('read', table, charges);
    }
    if (!refusal) return response;
    for (const [table, keys] of Object.entries(answer.UnprocessedKeys ?? {})) {
      const into = unprocessed[table];
      unprocessed[table] = { ...keys, Keys: [...(into?.Keys ?? []), ...keys.Keys] };
    }
    return jsonResponse(200, { ...answer, UnprocessedKeys: unprocessed });
  }
}

/** Starts the DynamoDB throughput proxy in front of `dynamodbEndpoint` (dynalite). */
export function startDynamoThroughputProxy(
  dynamodbEndpoint: string,
  model: DynamoThroughputModel,
): Promise<RunningProxy> {
  const images = new ItemImages();
  return startJsonProxy(dynamodbEndpoint, (upstream) => (request) => {
    const header = request.headers[ENVIRONMENT_HEADER];
    const environment = parseEnvironmentHeader(typeof header === 'string' ? header : undefined);
    return new DynamoThroughputProxy(model.meterFor(environment), upstream, images).handle(request);
  });
}
