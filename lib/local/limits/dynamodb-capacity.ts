/**
 * DynamoDB's capacity-unit arithmetic, on items in the wire format (`{ name: { S: '…' } }`),
 * so the throughput model charges what AWS would bill. Pure: no I/O, no clock.
 */
import { partitionKind } from '../../../functions/adapters/dynamo/table-schema.js';
import { AWS_LIMITS } from '../../../functions/contract/aws-limits.js';

/** An attribute value as DynamoDB's JSON protocol writes it. */
export type WireValue = {
  S?: string;
  N?: string;
  B?: string;
  BOOL?: boolean;
  NULL?: boolean;
  L?: WireValue[];
  M?: WireItem;
  SS?: string[];
  NS?: string[];
  BS?: string[];
};
export type WireItem = Record<string, WireValue>;

const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/** A number costs about one byte per two significant digits, plus one (DynamoDB's published rule). */
function numberBytes(text: string): number {
  const digits = text
    .replace(/^[-+]?/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** A binary value travels base64-encoded; its size is the decoded length. */
const binaryBytes = (base64: string): number => Buffer.from(base64, 'base64').length;

function valueBytes(value: WireValue): number {
  if (value.S !== undefined) return utf8Bytes(value.S);
  if (value.N !== undefined) return numberBytes(value.N);
  if (value.B !== undefined) return binaryBytes(value.B);
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  // Lists and maps cost 3 bytes, plus 1 byte per element, whatever the elements cost.
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + 1 + valueBytes(element), 0);
  if (value.M !== undefined) return 3 + Object.keys(value.M).length + itemBytes(value.M);
  if (value.SS !== undefined) return value.SS.reduce((sum, element) => sum + utf8Bytes(element), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, element) => sum + numberBytes(element), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, element) => sum + binaryBytes(element), 0);
  return 0;
}

/** An item's size by DynamoDB's rules: each attribute's UTF-8 name length plus its value's size. */
export function itemBytes(item: WireItem): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8Bytes(name) + valueBytes(value), 0);
}

/** Write units for one item write: 1 per KB (rounded up) of the larger of the item before and after, at least 1. */
export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / AWS_LIMITS.dynamodb.writeUnitBytes));
}

/**
 * Read units for `bytes` read in one request (one item, or one Query page's items summed):
 * 1 per 4 KB rounded up, at least 1, halved for an eventually consistent read.
 */
export function readUnits(bytes: number, consistent: boolean): number {
  const units = Math.max(1, Math.ceil(bytes / AWS_LIMITS.dynamodb.readUnitBytes));
  return consistent ? units : units / 2;
}

/** The key's class, which names its kind of item, as the table's schema reads it from the key (`B`, `CLOCK`, `RATE`…). */
export function keyClass(value: string): string {
  return partitionKind(value);
}

/** The key attribute names a throughput model needs: the table's partition key and each index's. */
export interface KeySchema {
  readonly partitionKey: string;
  readonly sortKey: string;
  readonly indexes: readonly { readonly name: string; readonly partitionKey: string }[];
}

/** A partition key in the table itself (`index` undefined) or in one of its secondary indexes. */
export interface PartitionKeyRef {
  readonly table: string;
  readonly index?: string;
  readonly value: string;
}

export const partitionId = (ref: PartitionKeyRef): string => JSON.stringify([ref.table, ref.index ?? '', ref.value]);

export function partitionRef(id: string): PartitionKeyRef {
  const [table, index, value] = JSON.parse(id) as [string, string, string];
  return { table, value, ...(index !== '' && { index }) };
}

/** The string form of a key attribute; numbers and binaries key partitions too. */
function keyValue(value: WireValue | undefined): string | undefined {
  return value?.S ?? value?.N ?? value?.B;
}

/** An item's primary key as text (`pk` or `pk / sk`), naming it in reports. */
export function itemKeyText(schema: KeySchema, item: WireItem): string | undefined {
  const partition = keyValue(item[schema.partitionKey]);
  if (partition === undefined) return undefined;
  const sort = schema.sortKey === undefined ? undefined : keyValue(item[schema.sortKey]);
  return sort === undefined ? partition : `${partition} / ${sort}`;
}

export function tablePartition(table: string, schema: KeySchema, item: WireItem): PartitionKeyRef | undefined {
  const value = keyValue(item[schema.partitionKey]);
  return value === undefined ? undefined : { table, value };
}

/**
 * The index partitions one item write touches. The indexes project keys only, so an index is
 * written when the item enters it, leaves it or moves within it (its key changes): a removal
 * and an insertion are one write each, on the old and the new index key.
 */
export function indexWrites(
  table: string,
  schema: KeySchema,
  before: WireItem | undefined,
  after: WireItem | undefined,
): PartitionKeyRef[] {
  return schema.indexes.flatMap((index) => {
    const old = keyValue(before?.[index.partitionKey]);
    const next = keyValue(after?.[index.partitionKey]);
    if (old === next) return [];
    return [old, next].flatMap((value) => (value === undefined ? [] : [{ table, index: index.name, value }]));
  });
}
