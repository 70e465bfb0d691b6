/**
 * Per-bizType settings: each business type of a tenant may name a default target, its own
 * retry policy and a cap on how fast its callbacks go out (as WeChat Pay's timer configures
 * per biz_type). The settings are applied when a task is submitted and copied onto it, so
 * a change applies to tasks submitted after it and delivery needs no read of the settings.
 */
import type { BizTypeSettingsRequest } from '../../contract/wire.js';
import type { Clock, DeliveryPolicy, Target } from '../kernel/task.js';
import { ttlCache } from '../kernel/ttl-cache.js';
import { targetProblem, type TargetRules } from '../targets/target-rules.js';
import type { Tenant } from '../tenants/tenants.js';
import { formatPath, type NewTask, type Parsed, type TaskDraft } from './schemas.js';

export interface BizTypeSettings extends DeliveryPolicy {
  readonly tenantId: string;
  readonly bizType: string;
  /** The target of the bizType's tasks that name none. */
  readonly defaultTarget?: Target;
  readonly updatedAtMs: number;
}

export interface BizTypeStore {
  /** Creates or replaces the tenant's settings for the bizType. */
  put(settings: BizTypeSettings): Promise<void>;
  get(tenantId: string, bizType: string): Promise<BizTypeSettings | undefined>;
  /** The tenant's settings, by bizType. */
  list(tenantId: string): Promise<BizTypeSettings[]>;
  /** False if the tenant had no settings for the bizType. */
  delete(tenantId: string, bizType: string): Promise<boolean>;
}

/** Reads settings for submits; a change is seen within the cache's time to live. */
export interface BizTypeDirectory {
  settings(tenantId: string, bizType: string): Promise<BizTypeSettings | undefined>;
}

/** How long the api remembers a bizType's settings: a batch of tasks costs one read per distinct bizType. */
export const BIZ_TYPE_CACHE_TTL_MS = 30_000;

export function cachedBizTypeDirectory(store: BizTypeStore, clock: Clock, ttlMs: number): BizTypeDirectory {
  const remembered = ttlCache(clock, ttlMs);
  return {
    // Remembered by the pair as a tuple, which no two pairs share whatever their text holds.
    settings: (tenantId, bizType) =>
      remembered(JSON.stringify([tenantId, bizType]), () => store.get(tenantId, bizType)),
  };
}

/** The delivery settings a task carries: those the bizType sets, nothing when it sets none. */
export function policyOf(settings: BizTypeSettings | undefined): DeliveryPolicy | undefined {
  if (!settings) return undefined;
  const policy: DeliveryPolicy = {
    ...(settings.maxAttempts !== undefined && { maxAttempts: settings.maxAttempts }),
    ...(settings.backoffBaseSeconds !== undefined && { backoffBaseSeconds: settings.backoffBaseSeconds }),
    ...(settings.backoffMaxSeconds !== undefined && { backoffMaxSeconds: settings.backoffMaxSeconds }),
    ...(settings.callbackRateLimitPerSecond !== undefined && {
      callbackRateLimitPerSecond: settings.callbackRateLimitPerSecond,
    }),
  };
  return Object.keys(policy).length > 0 ? policy : undefined;
}

/**
 * The task a draft makes under its bizType's settings: the bizType's default target where
 * the draft names none (a task with neither is refused, at `target`), and its delivery policy.
 */
export function applyBizType(
  draft: TaskDraft,
  settings: BizTypeSettings | undefined,
  pathPrefix: ReadonlyArray<PropertyKey> = [],
): Parsed<NewTask> {
  const target = draft.target ?? settings?.defaultTarget;
  if (!target) {
    const fix =
      draft.bizType === undefined
        ? 'give a target, or a bizType that has a defaultTarget'
        : `give a target, or set a defaultTarget for bizType "${draft.bizType}" with PUT /v1/biz-types/{bizType}`;
    return { ok: false, errors: [{ path: formatPath([...pathPrefix, 'target']), message: `is required: ${fix}` }] };
  }
  const policy = policyOf(settings);
  return { ok: true, value: { ...draft, target, ...(policy && { policy }) } };
}

export interface BizTypeAdminPorts {
  readonly bizTypeStore: BizTypeStore;
  readonly targetRules: TargetRules;
  readonly clock: Clock;
}

/**
 * Creates or replaces the tenant's settings for a bizType. The default target gets the checks
 * a task's target gets at submit (the tenant's host allow-list, where the host points, the
 * deployer's allow-lists), so a task that takes it is refused for the same reasons.
 */
export async function saveBizType(
  ports: BizTypeAdminPorts,
  tenant: Tenant,
  bizType: string,
  request: BizTypeSettingsRequest,
): Promise<Parsed<BizTypeSettings>> {
  if (request.defaultTarget) {
    const problem = await targetProblem(request.defaultTarget, tenant, ports.targetRules, '');
    if (problem) return { ok: false, errors: [{ ...problem, path: problem.path.replace(/^target/, 'defaultTarget') }] };
  }
  const settings: BizTypeSettings = { ...request, tenantId: tenant.id, bizType, updatedAtMs: ports.clock.now() };
  await ports.bizTypeStore.put(settings);
  return { ok: true, value: settings };
}
