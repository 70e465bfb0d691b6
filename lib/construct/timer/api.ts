import { AccessLogField, AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpMethod, LogGroupLogDestination, type ThrottleSettings } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

import { API_ROUTES } from '../../../functions/contract/topology.js';
import { acknowledgeNagRule, timerLogGroup } from './construct-helpers.js';

/**
 * What every route of the API accepts before it answers 429: 1,000 requests a second, in bursts
 * of up to 2,000. That is a tenth of the account's regional API Gateway quota (10,000/s), so one
 * runaway caller cannot starve the account's other APIs, and about 50 concurrent api functions
 * at 50 ms a request, far from Lambda's default limit of 1,000. Batches of 100 still admit
 * 100,000 tasks a second, well above the 20,000-a-second peak the design plans for; a workload
 * of single POSTs above 1,000 tasks a second needs a higher `apiThrottle`. TimerClient retries
 * a 429 with the same idempotency key, so throttling never creates a second task.
 */
export const DEFAULT_API_THROTTLE = { rateLimit: 1000, burstLimit: 2000 } as const satisfies ThrottleSettings;

/**
 * One JSON object per API request. The route key, not the path, so task ids stay out of the
 * logs; `integrationError` says why the api function failed when API Gateway answers 5xx.
 */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: AccessLogField.contextRequestId(),
    ip: AccessLogField.contextIdentitySourceIp(),
    requestTime: AccessLogField.contextRequestTime(),
    routeKey: AccessLogField.contextRouteKey(),
    status: AccessLogField.contextStatus(),
    latency: AccessLogField.contextResponseLatency(),
    responseLength: AccessLogField.contextResponseLength(),
    integrationError: AccessLogField.contextIntegrationErrorMessage(),
  }),
);

export interface TimerApiProps {
  /** The function behind every route. */
  readonly handler: lambda.IFunction;
  /** Requests a second and burst size every route accepts before answering 429. */
  readonly throttle: ThrottleSettings;
  /** How long the access logs are kept. */
  readonly logRetention: logs.RetentionDays;
  /**
   * The function behind the public function URL, the cheaper second front door: the api's code with
   * a reserved concurrency of its own. Undefined, there is no URL.
   */
  readonly urlHandler?: lambda.IFunction;
}

/**
 * The front doors of the api's code. The HTTP API: every route of functions/contract/topology.ts
 * API_ROUTES to the api function, on a throttled $default stage with JSON access logs. And, when
 * asked for, a function URL on the URL function: no stage, no throttle and no access logs, at no
 * charge beyond the invocation, bounded by that function's own reserved concurrency. A part of `DistributedTimer` that adds its resources to the timer's own scope (see
 * there why it is not a construct of its own).
 */
export class TimerApi {
  readonly api: HttpApi;
  readonly functionUrl?: lambda.FunctionUrl;

  constructor(scope: Construct, props: TimerApiProps) {
    this.api = new HttpApi(scope, 'HttpApi', { description: 'Distributed timer API v1', createDefaultStage: false });
    // The $default stage, made here because the one HttpApi makes itself takes no throttle or access logs.
    this.api.addStage('DefaultStage', {
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(timerLogGroup(scope, 'ApiAccessLogs', props.logRetention)),
        format: ACCESS_LOG_FORMAT,
      },
    });
    const integration = new HttpLambdaIntegration('ApiIntegration', props.handler);
    for (const routeKey of API_ROUTES) {
      const [method, path] = routeKey.split(' ') as [keyof typeof HttpMethod, string];
      const noAuthorizerReason =
        `${routeKey} is authenticated by the api function itself, which resolves the caller's API key to its tenant ` +
        "and lets it see and change only that tenant's tasks. That check reads the task table anyway; an API " +
        'Gateway authorizer would be a second copy of it, and a Lambda authorizer a second invocation per request.';
      for (const route of this.api.addRoutes({ path, methods: [HttpMethod[method]], integration })) {
        acknowledgeNagRule(route, 'APIG4', noAuthorizerReason);
      }
    }
    if (props.urlHandler) {
      // NONE, not AWS_IAM: callers hold API keys, not AWS credentials, and the api's code checks the
      // key on every request exactly as it does behind the HTTP API's routes, which have no
      // authorizer either (see APIG4 above); a made-up key is refused without a table read. The URL
      // function's reserved concurrency is the URL's throttle, and the api function's is not shared.
      this.functionUrl = props.urlHandler.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE });
    }
  }
}
