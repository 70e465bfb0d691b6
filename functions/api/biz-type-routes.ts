/**
 * PUT, GET and DELETE /v1/biz-types/{bizType} and GET /v1/biz-types: a tenant's settings per
 * business type. Another tenant's bizType is simply not there: every read is keyed by the caller.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

import type { ApiRouteKey } from '../contract/topology.js';
import type { BizTypeList, BizTypeSettings as BizTypeSettingsView } from '../contract/wire.js';
import { type BizTypeAdminPorts, type BizTypeSettings, saveBizType } from '../core/submit/biz-types.js';
import { bizTypeNameSchema, bizTypeSettingsSchema, issuesToErrors } from '../core/submit/schemas.js';
import type { Tenant } from '../core/tenants/tenants.js';
import { type HttpResult, jsonResponse, problem, problemResponse, readJsonBody, validationProblem } from './http.js';

export type BizTypeRouteKey = Extract<ApiRouteKey, `${string} /v1/biz-types${string}`>;

export type BizTypeRoutePorts = BizTypeAdminPorts & { readonly allowInsecureTargets: boolean };

/** The settings as the API shows them. */
export function bizTypeView(settings: BizTypeSettings): BizTypeSettingsView {
  const { tenantId: _tenantId, updatedAtMs, ...fields } = settings;
  return { ...fields, updatedAt: new Date(updatedAtMs).toISOString() };
}

const notFound = (bizType: string) =>
  problemResponse(
    problem(
      404,
      'not-found',
      `No settings for bizType "${bizType}"; create them with PUT /v1/biz-types/${encodeURIComponent(bizType)}.`,
    ),
  );

/** Serves the bizType routes for an authenticated tenant. */
export async function bizTypeRoute(
  ports: BizTypeRoutePorts,
  tenant: Tenant,
  routeKey: BizTypeRouteKey,
  event: APIGatewayProxyEventV2,
): Promise<HttpResult> {
  if (routeKey === 'GET /v1/biz-types') {
    const list = await ports.bizTypeStore.list(tenant.id);
    return jsonResponse(200, { bizTypes: list.map(bizTypeView) } satisfies BizTypeList);
  }
  const name = bizTypeNameSchema.safeParse(event.pathParameters?.bizType ?? '');
  if (!name.success) return problemResponse(validationProblem(issuesToErrors(name.error.issues, ['bizType'])));
  const bizType = name.data;
  switch (routeKey) {
    case 'PUT /v1/biz-types/{bizType}': {
      const body = readJsonBody(event);
      if (!body.ok) return problemResponse(body.problem);
      const request = bizTypeSettingsSchema(ports).safeParse(body.value);
      if (!request.success) return problemResponse(validationProblem(issuesToErrors(request.error.issues)));
      const saved = await saveBizType(ports, tenant, bizType, request.data);
      return saved.ok ? jsonResponse(200, bizTypeView(saved.value)) : problemResponse(validationProblem(saved.errors));
    }
    case 'GET /v1/biz-types/{bizType}': {
      const settings = await ports.bizTypeStore.get(tenant.id, bizType);
      return settings ? jsonResponse(200, bizTypeView(settings)) : notFound(bizType);
    }
    case 'DELETE /v1/biz-types/{bizType}':
      return (await ports.bizTypeStore.delete(tenant.id, bizType))
        ? jsonResponse(200, { bizType, deleted: true })
        : notFound(bizType);
  }
}
