/**
 * `npm run bench -- --profile`: where the timer's CPU goes at its hottest steady rate. Every
 * process of the timer (the handlers' and the emulators') samples itself from start to exit
 * (bench/cpu-profile-hook.mjs); the samples taken while the tasks fell due are summed by frame
 * (self time) and grouped as SDK, HTTP, emulator, GC and project code.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { markdownTable } from '../lib/construct/plan/table-format.js';

/** The slice of V8's `.cpuprofile` format the summary reads. */
export interface CpuProfile {
  readonly nodes: ReadonlyArray<{
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
    readonly children?: readonly number[];
  }>;
  /** Microseconds on the monotonic clock `process.hrtime` reads, the same in every process. */
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** One process's profile; every sample an emulator's process takes is the emulator's, whatever code it ran. */
export interface ProcessProfile {
  readonly process: 'handlers' | 'emulator';
  readonly profile: CpuProfile;
}

export type ProfileGroup = 'SDK' | 'HTTP' | 'emulator' | 'GC' | 'project' | 'other libraries' | 'Node and V8';

const SDK = /node_modules\/(@aws-sdk|@smithy|@aws-crypto)\//;
const EMULATOR =
  /node_modules\/(dynalite|fauxqs|leveldown|memdown|levelup|level-[^/]*|abstract-leveldown|fastify|@fastify)\//;
const HTTP =
  /^node:(_http_|http|https|net|tls|dns|internal\/(http|net|tls|dns|stream_base_commons|js_stream_socket|deps\/undici))|node_modules\/undici\//;

/**
 * The group of a frame with a script. Frames without one (V8 builtins such as JSON.parse, native
 * bindings) are charged to their caller's group by `summarizeProfiles`.
 */
export function groupOfUrl(url: string): ProfileGroup {
  if (SDK.test(url)) return 'SDK';
  if (EMULATOR.test(url)) return 'emulator';
  if (HTTP.test(url)) return 'HTTP';
  if (url.includes('/node_modules/')) return 'other libraries';
  if (url.startsWith('file:') || url.startsWith('/')) return 'project';
  return 'Node and V8';
}

export interface FrameTime {
  readonly frame: string;
  readonly group: ProfileGroup;
  readonly ms: number;
  readonly share: number;
}

export interface ProfileSummary {
  /** Sampled CPU time in the window, idle left out, all processes together. */
  readonly totalMs: number;
  readonly byGroup: ReadonlyArray<{ readonly group: ProfileGroup; readonly ms: number; readonly share: number }>;
  readonly byProcess: { readonly handlers: number; readonly emulator: number };
  /** The frames with the most self time, most first. */
  readonly top: readonly FrameTime[];
}

/** Where a frame is, relative to the repository when it is in it. */
function frameName(functionName: string, url: string, lineNumber: number, root: string): string {
  const name = functionName || '(anonymous)';
  if (!url) return `${name} (native)`;
  const path = url.startsWith('file:') ? fileURLToPath(url) : url;
  const where = path.startsWith(root) ? path.slice(root.length + 1) : path;
  return `${name} ${where.replace(/^.*node_modules\//, '')}:${lineNumber + 1}`;
}

/**
 * Self time by frame and group over the samples taken between `fromUs` and `toUs`. A sample's
 * time is the gap to the next sample (to the profile's end for the last).
 */
export function summarizeProfiles(
  profiles: readonly ProcessProfile[],
  window: { readonly fromUs: number; readonly toUs: number },
  root: string,
  topCount = 10,
): ProfileSummary {
  const byFrame = new Map<string, { group: ProfileGroup; us: number }>();
  const byGroup = new Map<ProfileGroup, number>();
  const byProcess = { handlers: 0, emulator: 0 };
  for (const { process, profile } of profiles) {
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const parents = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
    const groups = new Map<number, ProfileGroup>();
    const groupOf = (id: number): ProfileGroup => {
      const known = groups.get(id);
      if (known) return known;
      const { functionName, url } = nodes.get(id)?.callFrame ?? { functionName: '', url: '' };
      const parent = parents.get(id);
      const group: ProfileGroup =
        process === 'emulator'
          ? 'emulator'
          : functionName === '(garbage collector)'
            ? 'GC'
            : url
              ? groupOfUrl(url)
              : parent !== undefined && !functionName.startsWith('(')
                ? groupOf(parent)
                : 'Node and V8';
      groups.set(id, group);
      return group;
    };
    let at = profile.startTime;
    const times = profile.timeDeltas.map((delta) => (at += delta));
    profile.samples.forEach((id, index) => {
      const time = times[index] ?? profile.endTime;
      if (time < window.fromUs || time > window.toUs) return;
      const frame = nodes.get(id)?.callFrame;
      if (!frame || frame.functionName === '(idle)') return;
      const us = (times[index + 1] ?? profile.endTime) - time;
      const group = groupOf(id);
      const name = frameName(frame.functionName, frame.url, frame.lineNumber, root);
      const key = `${process} ${name}`;
      const entry = byFrame.get(key) ?? { group, us: 0 };
      entry.us += us;
      byFrame.set(key, entry);
      byGroup.set(group, (byGroup.get(group) ?? 0) + us);
      byProcess[process] += us / 1000;
    });
  }
  const totalUs = [...byGroup.values()].reduce((sum, us) => sum + us, 0);
  const share = (us: number) => (totalUs === 0 ? 0 : us / totalUs);
  return {
    totalMs: totalUs / 1000,
    byGroup: [...byGroup]
      .sort(([, a], [, b]) => b - a)
      .map(([group, us]) => ({ group, ms: us / 1000, share: share(us) })),
    byProcess,
    top: [...byFrame]
      .sort(([, a], [, b]) => b.us - a.us)
      .slice(0, topCount)
      .map(([key, { group, us }]) => ({ frame: key, group, ms: us / 1000, share: share(us) })),
  };
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;

export function renderProfile(summary: ProfileSummary): string {
  return [
    `${summary.totalMs.toFixed(0)} ms of CPU sampled: the handlers' process ${summary.byProcess.handlers.toFixed(0)} ms, the emulators' ${summary.byProcess.emulator.toFixed(0)} ms.`,
    '',
    markdownTable(
      ['group', 'ms', 'share'],
      summary.byGroup.map(({ group, ms, share }) => [group, Math.round(ms), percent(share)]),
    ),
    '',
    `The top ${summary.top.length} frames by self time (process, function, where):`,
    '',
    markdownTable(
      ['#', 'frame', 'group', 'ms', 'share'],
      summary.top.map(({ frame, group, ms, share }, index) => [
        index + 1,
        frame,
        group,
        Math.round(ms),
        percent(share),
      ]),
    ),
  ].join('\n');
}

/** The environment that makes a process and its children profile themselves into `dir`. */
export function profilingEnv(dir: string): Record<string, string> {
  const hook = new URL('cpu-profile-hook.mjs', import.meta.url).href;
  return {
    BENCH_CPU_PROFILE_DIR: dir,
    NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import ${hook}`].filter(Boolean).join(' '),
  };
}

/** The profiles the processes wrote into `dir`, the one of `handlersPid` told apart from the emulators'. */
export async function readProfiles(dir: string, handlersPid: number): Promise<ProcessProfile[]> {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.cpuprofile'));
  return Promise.all(
    files.map(async (file) => ({
      process: file === `${handlersPid}.cpuprofile` ? ('handlers' as const) : ('emulator' as const),
      profile: JSON.parse(await readFile(join(dir, file), 'utf8')) as CpuProfile,
    })),
  );
}

/** A wall-clock time (ms since the epoch) on the profiles' clock: monotonic microseconds. */
export function monotonicUsAt(wallMs: number): number {
  return Number(process.hrtime.bigint() / 1000n) - (Date.now() - wallMs) * 1000;
}
