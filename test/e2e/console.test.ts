import { mkdir } from 'node:fs/promises';
import { request } from 'node:http';

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { issueApiKey, newTenant } from '../../functions/core/tenants/tenants.js';
import {
  LOCAL_CONSOLE_PATH,
  LOCAL_CONSOLE_TASKS_PATH,
  LOCAL_INBOX_PATH,
  LOCAL_REDRIVE_PATH,
} from '../../lib/local/paths.js';
import type { LocalTimer } from '../../lib/local/runtime.js';
import { CHROMIUM_INSTALL_TIMEOUT_MS, openBrowser } from '../support/browser.js';
import { startTestTimer } from '../support/local-timer-fixture.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const SCREENSHOT = 'reports/console.png';
const OTHER_TENANT = 'acme';
/** Caller-controlled strings that would run script if the page ever parsed them as markup. */
const HOSTILE_BIZ_IDS = [
  '<img src=x onerror="window.__consoleInjected=1">',
  '<script>window.__consoleInjected=2</script>',
];
const HOSTILE_BIZ_TYPE = '<b>bold</b>';
/** How long the page may take to show what just happened: a refresh, or a redrive, whose last receive waits 1 s. */
const WAIT_FOR_PAGE = { timeout: 5_000 };
/** How long to wait for deliveries to land and fail. */
const WAIT_FOR_DELIVERIES = { timeout: 15_000 };

let timer: LocalTimer;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let browser: Awaited<ReturnType<typeof openBrowser>>;
let page: Page;
let otherTenantKey: string;
/** The /down receiver answers 500 until the test has seen its task in the DLQ, so a redrive can deliver it. */
let downIsUp = false;

beforeAll(async () => {
  browser = await openBrowser();
  // One attempt, so a failing webhook is dead-lettered at once.
  timer = await startTestTimer({
    settings: { maxAttempts: 1, backoffBaseSeconds: 1, backoffMaxSeconds: 1 },
  });
  receiver = await startWebhookReceiver({ '/down': () => (downIsUp ? 200 : 500) });
  await timer.tenantStore.createTenant(newTenant(OTHER_TENANT, Date.now()));
  const { apiKey } = await issueApiKey(timer.tenantStore, OTHER_TENANT, Date.now(), 'console test');
  otherTenantKey = apiKey;
  page = await browser.context.newPage();
}, CHROMIUM_INSTALL_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await timer?.stop();
});

async function api(method: string, path: string, body?: unknown, apiKey = timer.apiKey) {
  const response = await fetch(`${timer.apiUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function schedule(task: Record<string, unknown>, apiKey = timer.apiKey): Promise<string> {
  const created = await api('POST', '/v1/tasks', task, apiKey);
  expect(created.status).toBe(201);
  return created.body.id as string;
}

/** The text of each cell of the row showing `taskId` in the table `tableId`. */
const rowCells = (tableId: string, taskId: string) =>
  page.locator(`#${tableId} tr[data-task-id="${taskId}"] td`).allTextContents();

const statusCount = (status: string) => page.locator(`#status-counts [data-status="${status}"] .count`).textContent();

/** Sends a request as a page on another site, or behind a rebound DNS name, could. */
function foreignRequest(method: string, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = request(`${timer.apiUrl}${path}`, { method, headers }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    sent.on('error', reject);
    sent.end();
  });
}

describe('End to end: the local console in headless Chromium', () => {
  it('shows every tenant’s tasks by status, the coming seconds and deliveries with lateness, and drains the DLQ by its button', async () => {
    // Prepare: deliveries to the built-in inbox (two with hostile bizIds), one dead letter,
    // one cancelled task, and tasks of two tenants due in the same second, about 45 s away.
    const inbox = { type: 'http', url: `${timer.apiUrl}${LOCAL_INBOX_PATH}` };
    const [ordinary, ...hostile] = await Promise.all([
      schedule({ delaySeconds: 0, target: inbox, bizType: 'order', bizId: 'order-1', payload: { n: 1 } }),
      ...HOSTILE_BIZ_IDS.map((bizId) =>
        schedule({ delaySeconds: 0, target: inbox, bizType: HOSTILE_BIZ_TYPE, bizId, payload: { html: bizId } }),
      ),
    ]);
    const dead = await schedule({
      delaySeconds: 0,
      target: { type: 'http', url: receiver.url('/down') },
      bizId: 'dead-1',
    });
    const cancelled = await schedule({ delaySeconds: 600, target: inbox, bizId: 'cancel-me' });
    expect((await api('DELETE', `/v1/tasks/${cancelled}`)).status).toBe(200);
    await schedule({ delaySeconds: 900, target: inbox, bizId: 'later' });
    const sharedSecondMs = (Math.floor(Date.now() / 1000) + 45) * 1000;
    await schedule({ dueAt: sharedSecondMs + 100, target: inbox, bizId: 'soon-1' });
    await schedule({ dueAt: sharedSecondMs + 700, target: inbox, bizId: 'soon-2' });
    const otherTenantTask = await schedule(
      { dueAt: sharedSecondMs + 400, target: inbox, bizId: 'acme-1' },
      otherTenantKey,
    );

    // Act: open the console as a developer would, with no API key.
    await page.goto(`${timer.apiUrl}${LOCAL_CONSOLE_PATH}`);

    // Assess: counts by status, across tenants, once the deliveries have landed and the dead one failed.
    await expect.poll(() => statusCount('DELIVERED'), WAIT_FOR_DELIVERIES).toBe('3');
    await expect.poll(() => statusCount('FAILED'), WAIT_FOR_DELIVERIES).toBe('1');
    expect(await statusCount('PENDING')).toBe('4');
    expect(await statusCount('CANCELLED')).toBe('1');
    expect(await statusCount('DELIVERING')).toBe('0');
    expect((await rowCells('tasks', otherTenantTask))[2]).toBe(OTHER_TENANT);

    // The shared second holds its three tasks, whichever tenant they belong to.
    const sharedSecond = page.locator(`#upcoming-seconds tr[data-second-start="${sharedSecondMs}"] td`);
    expect(await sharedSecond.last().textContent()).toBe('3');
    expect(await page.locator('#upcoming-summary').textContent()).toBe(
      '3 tasks due in the next minute, 4 in the next hour.',
    );

    // A delivery shows the lateness the callback recorded, and the chart plots every delivery.
    const stored = await api('GET', `/v1/tasks/${ordinary}`);
    await expect.poll(() => rowCells('deliveries', ordinary ?? ''), WAIT_FOR_PAGE).toContain('order-1');
    const [, lateness, tenant] = await rowCells('deliveries', ordinary ?? '');
    expect(Number(lateness?.replace(/[^\d]/g, ''))).toBe(stored.body.latenessMs);
    expect(tenant).toBe('dev');
    await expect.poll(() => page.locator('#lateness-chart circle').count(), WAIT_FOR_PAGE).toBe(3);

    // The dead letter is in the DLQ. Redrive, pressed from the keyboard once the target is back, drains it.
    await expect.poll(() => page.locator('#dlq-count').textContent(), WAIT_FOR_DELIVERIES).toBe('1');
    expect(await rowCells('dead-letters', dead)).toEqual([
      dead,
      'dev',
      'dead-1',
      '1',
      expect.stringMatching(/HTTP 500/),
    ]);
    await mkdir('reports', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    downIsUp = true;
    await page.locator('#redrive').focus();
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.locator('#redrive-result').textContent(), WAIT_FOR_PAGE)
      .toBe('Moved 1 dead letter back to the delivery queue.');
    await expect.poll(() => page.locator('#dlq-count').textContent(), WAIT_FOR_PAGE).toBe('0');
    await expect.poll(() => statusCount('DELIVERED'), WAIT_FOR_DELIVERIES).toBe('4');
    expect(await statusCount('FAILED')).toBe('0');
    expect(await page.locator('#redrive:focus').count()).toBe(1);

    // Hostile strings show as the text they are, never as markup.
    for (const [index, taskId] of hostile.entries()) {
      const cells = await rowCells('tasks', taskId);
      expect(cells[4]).toBe(HOSTILE_BIZ_TYPE);
      expect(cells[5]).toBe(HOSTILE_BIZ_IDS[index]);
    }
    expect(await page.locator('main img, main script, main b').count()).toBe(0);
    expect(await page.evaluate('typeof window.__consoleInjected')).toBe('undefined');
  }, 40_000);

  it('shows each schedule with its next occurrences, and "paused" once it is paused', async () => {
    // Prepare: a daily cron in Berlin, with a bizId that would be markup if the page parsed it.
    const created = await api('POST', '/v1/schedules', {
      cron: '30 2 * * *',
      timezone: 'Europe/Berlin',
      target: { type: 'http', url: `${timer.apiUrl}${LOCAL_INBOX_PATH}` },
      bizId: HOSTILE_BIZ_IDS[0],
    });
    expect(created.status).toBe(201);
    const { id, nextOccurrences } = created.body as { id: string; nextOccurrences: string[] };
    const occurrences = page.locator(`#schedules tr[data-schedule-id="${id}"] .occurrence`);

    // Act
    await page.goto(`${timer.apiUrl}${LOCAL_CONSOLE_PATH}`);

    // Assess: the five next occurrences, each with its exact time in its title; then paused.
    await expect.poll(() => occurrences.count(), WAIT_FOR_PAGE).toBe(5);
    expect(await occurrences.evaluateAll((spans) => spans.map((span) => span.getAttribute('title')))).toEqual(
      nextOccurrences,
    );
    const cells = await page.locator(`#schedules tr[data-schedule-id="${id}"] td`).allTextContents();
    expect(cells.slice(0, 5)).toEqual([id, 'dev', '30 2 * * *', 'Europe/Berlin', HOSTILE_BIZ_IDS[0]]);
    expect((await api('PATCH', `/v1/schedules/${id}`, { paused: true })).status).toBe(200);
    await expect
      .poll(
        () => page.locator(`#schedules tr[data-schedule-id="${id}"] .next-occurrences`).textContent(),
        WAIT_FOR_PAGE,
      )
      .toBe('paused');
    expect(await page.evaluate('typeof window.__consoleInjected')).toBe('undefined');
  }, 30_000);

  it('answers its local routes only on this machine: not through a rebound DNS name, nor to another site’s page', async () => {
    // Act
    const port = new URL(timer.apiUrl).port;
    const reboundName = await foreignRequest('GET', LOCAL_CONSOLE_TASKS_PATH, {
      host: `timer.attacker.example:${port}`,
    });
    const otherSite = await foreignRequest('POST', LOCAL_REDRIVE_PATH, { origin: 'https://attacker.example' });
    const ownPage = await foreignRequest('GET', LOCAL_CONSOLE_TASKS_PATH, { origin: timer.apiUrl });

    // Assess
    expect(reboundName).toBe(403);
    expect(otherSite).toBe(403);
    expect(ownPage).toBe(200);
  });
});
