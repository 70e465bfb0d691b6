/**
 * `timer dlq redrive` (also `npm run dlq:redrive`): moves every dead letter back to the
 * delivery queue, where the callback revives each FAILED task with a fresh attempt budget
 * and delivers it again.
 *
 * In the cloud it starts an SQS message move task (the URLs are stack outputs; your AWS
 * credentials need sqs:StartMessageMoveTask and read/write on both queues). Locally it
 * asks the running local mode to do the same move, since fauxqs has no move tasks.
 */
import { SQSClient } from '@aws-sdk/client-sqs';

import { startRedrive } from '../../functions/adapters/sqs-queues.js';
import { LOCAL_REDRIVE_PATH } from '../local/paths.js';
import { type Command, command, CommandFailed, COMMON_OPTIONS, UsageError } from './command.js';
import { dataDirOf, localApiUrl } from './connect.js';

async function redriveLocally(apiUrl: string): Promise<{ moved: number; taskIds: string[] }> {
  const response = await fetch(`${apiUrl}${LOCAL_REDRIVE_PATH}`, { method: 'POST' }).catch((error: unknown) => {
    const reason = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
    throw new CommandFailed(`could not reach local mode at ${apiUrl} (${reason}); is \`npm start\` running?`);
  });
  const body = (await response.json()) as { moved?: number; taskIds?: string[]; message?: string };
  if (!response.ok) throw new CommandFailed(`local mode answered ${response.status}: ${body.message ?? ''}`);
  return { moved: body.moved ?? 0, taskIds: body.taskIds ?? [] };
}

const SQS_QUEUE_URL_REGION = /^https:\/\/sqs\.([a-z0-9-]+)\./;

const redrive = command({
  name: 'dlq redrive',
  summary: 'Deliver the tasks in the delivery DLQ again, once the receiver is fixed',
  usage: '[--local [--api-url URL] | --dlq-url URL --queue-url URL]',
  details:
    'With --dlq-url and --queue-url (the stack outputs DeliveryDlqUrl and DeliveryQueueUrl) it starts an SQS message move task with your AWS credentials; otherwise it asks the running local mode to move its dead letters.',
  arguments: [],
  options: {
    local: { type: 'boolean', description: "Redrive local mode's DLQ (the default without --dlq-url)" },
    'api-url': {
      type: 'string',
      placeholder: 'URL',
      description: "Local mode's base URL (default: the running local mode's)",
    },
    'dlq-url': { type: 'string', placeholder: 'URL', description: 'The stack output DeliveryDlqUrl' },
    'queue-url': { type: 'string', placeholder: 'URL', description: 'The stack output DeliveryQueueUrl' },
    ...COMMON_OPTIONS,
  },
  async run(call) {
    const { local, 'api-url': apiUrl, 'dlq-url': dlqUrl, 'queue-url': queueUrl } = call.options;
    if (local && (dlqUrl !== undefined || queueUrl !== undefined)) {
      throw new UsageError(
        '--local redrives local mode; leave out --dlq-url and --queue-url, or drop --local for the cloud',
      );
    }
    if (dlqUrl === undefined && queueUrl === undefined) {
      const result = await redriveLocally(apiUrl ?? (await localApiUrl(dataDirOf(call.options, call.io), call.io)));
      call.output(result, `Moved ${result.moved} dead letters back to the delivery queue.`);
      return;
    }
    if (dlqUrl === undefined) throw new UsageError('--dlq-url is missing: the stack output DeliveryDlqUrl');
    if (queueUrl === undefined) throw new UsageError('--queue-url is missing: the stack output DeliveryQueueUrl');
    const region = SQS_QUEUE_URL_REGION.exec(dlqUrl)?.[1];
    if (!region) {
      throw new UsageError(
        `--dlq-url must be an SQS queue URL such as https://sqs.eu-west-1.amazonaws.com/123456789012/queue (got "${dlqUrl}")`,
      );
    }
    const taskHandle = await startRedrive(new SQSClient({ region }), dlqUrl, queueUrl);
    call.output(
      { taskHandle },
      `Started moving the dead letters back (task ${taskHandle}). Watch progress with:\n  aws sqs list-message-move-tasks --source-arn <the DLQ's ARN>`,
    );
  },
});

export const DLQ_COMMANDS: readonly Command[] = [redrive];
