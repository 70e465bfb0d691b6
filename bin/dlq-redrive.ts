/**
 * `npm run dlq:redrive`: moves every dead letter back to the delivery queue, where the
 * callback revives each FAILED task with a fresh attempt budget and delivers it again.
 *
 *   npm run dlq:redrive -- --local [--api http://127.0.0.1:3000]
 *   npm run dlq:redrive -- --dlq-url <DeliveryDlqUrl> --queue-url <DeliveryQueueUrl>
 *
 * In the cloud it starts an SQS message move task (the URLs are stack outputs; your AWS
 * credentials need sqs:StartMessageMoveTask and read/write on both queues). Locally it
 * asks the running `npm start` to do the same move, since fauxqs has no move tasks.
 */
import { parseArgs } from 'node:util';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startRedrive } from '../functions/adapters/sqs-queues';
import { LOCAL_REDRIVE_PATH } from '../lib/local/paths';

const usage = `Usage:
  npm run dlq:redrive -- --local [--api http://127.0.0.1:3000]
  npm run dlq:redrive -- --dlq-url <DeliveryDlqUrl> --queue-url <DeliveryQueueUrl>`;

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${usage}\n`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    local: { type: 'boolean', default: false },
    api: { type: 'string', default: `http://127.0.0.1:${process.env.TIMER_PORT ?? 3000}` },
    'dlq-url': { type: 'string' },
    'queue-url': { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});

if (values.help) {
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}

if (values.local) {
  const response = await fetch(`${values.api}${LOCAL_REDRIVE_PATH}`, { method: 'POST' }).catch((error: unknown) =>
    fail(`Could not reach local mode at ${values.api} (${error instanceof Error ? error.message : error}). Is npm start running?`),
  );
  const body = (await response.json()) as { moved?: number; message?: string };
  if (!response.ok) fail(`Local mode answered ${response.status}: ${body.message ?? ''}`);
  process.stdout.write(`Moved ${body.moved} dead letters back to the delivery queue.\n`);
} else {
  const dlqUrl = values['dlq-url'] ?? fail('--dlq-url is required (the stack output DeliveryDlqUrl), or use --local');
  const queueUrl = values['queue-url'] ?? fail('--queue-url is required (the stack output DeliveryQueueUrl)');
  const region = /^https:\/\/sqs\.([a-z0-9-]+)\./.exec(dlqUrl)?.[1] ?? fail(`--dlq-url ${dlqUrl} is not an SQS queue URL`);
  const handle = await startRedrive(new SQSClient({ region }), dlqUrl, queueUrl);
  process.stdout.write(
    `Started moving the dead letters back (task ${handle}). Watch progress with:\n  aws sqs list-message-move-tasks --source-arn <the DLQ's ARN>\n`,
  );
}
