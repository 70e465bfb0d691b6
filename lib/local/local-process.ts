/**
 * A part of local mode in a process of its own (an emulator, the scale model's proxies), so its
 * request handling runs on another core than the handlers' event loop. Both sides are here: the
 * parent forks the entry and waits for it to say it is ready; the entry serves what it started,
 * answers the parent's questions, closes cleanly when told to stop, and exits as soon as the
 * parent is gone (even SIGKILLed), so nothing outlives the local timer that started it.
 */
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, extname, join, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** What an entry tells its parent: what it started, why it could not, or its answer to a question. */
type ChildMessage =
  { readonly ready: unknown } | { readonly failed: string } | { readonly answer: number; readonly value: unknown };

/** What the parent tells an entry: stop, or answer `question` as question number `ask`. */
type ParentMessage = 'stop' | { readonly ask: number; readonly question: unknown };

export interface LocalProcess<Ready> {
  /** What the entry reported once it was serving, such as its endpoint. */
  readonly ready: Ready;
  /** Asks the entry a question (none: its current answer, such as the scale model's report). */
  ask<Answer>(question?: unknown): Promise<Answer>;
  stop(): Promise<void>;
}

/** Each TypeScript entry's bundle, made once per process (see plainEntry). */
const bundles = new Map<string, Promise<string>>();

/**
 * Gives each source file in a bundle its own `import.meta.url` (and `dirname`), as it has when run
 * from the sources: local mode finds its emulators' entries, its console's page files and its
 * package.json beside the module that asks, not beside the bundle.
 */
const ownLocation: import('esbuild').Plugin = {
  name: 'own-import-meta',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async ({ path }) => {
      if (path.includes(`${sep}node_modules${sep}`)) return undefined;
      const source = await readFile(path, 'utf8');
      return {
        loader: 'ts',
        contents: source
          .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(path).href))
          .replaceAll('import.meta.dirname', JSON.stringify(dirname(path))),
      };
    });
  },
};

/**
 * A TypeScript entry (run from the sources, in a clone) as one plain JavaScript file that node
 * runs without tsx's loader, which resolves and loads every module the process imports: bundled
 * by esbuild, each source file keeping its own location (ownLocation), its packages left to
 * resolve from the clone's node_modules, under whose .cache the file is written (named by its
 * content, so that processes bundling the same sources at once write the same file). An emulator
 * process that loaded tsx took 0.8 to 1.3 CPU-s to be ready, the bundle 0.55 to 0.9; local mode
 * (bin/local.ts) 3.2 to 4.5 through tsx, 2.6 to 2.8 bundled.
 */
export function plainEntry(entry: string): Promise<string> {
  let bundle = bundles.get(entry);
  if (!bundle) {
    bundle = (async () => {
      const requireBeside = createRequire(entry);
      const esbuild = requireBeside('esbuild') as typeof import('esbuild');
      const nodeModules = requireBeside.resolve('esbuild').replace(/(.*[\\/]node_modules)[\\/].*$/, '$1');
      const built = await esbuild.build({
        entryPoints: [entry],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        packages: 'external',
        plugins: [ownLocation],
        write: false,
        logLevel: 'warning',
      });
      const code = built.outputFiles[0]?.contents ?? new Uint8Array();
      const digest = createHash('sha256').update(code).digest('hex').slice(0, 16);
      const dir = join(nodeModules, '.cache', 'distributed-timer');
      const file = join(dir, `${basename(entry, extname(entry))}-${digest}.mjs`);
      if (!existsSync(file)) {
        mkdirSync(dir, { recursive: true });
        const partial = `${file}.${process.pid}.partial`;
        writeFileSync(partial, code);
        renameSync(partial, file);
      }
      return file;
    })();
    bundles.set(entry, bundle);
  }
  return bundle;
}

/**
 * Forks `name` (a module beside `besideUrl`: .ts when run from the sources, bundled first by
 * plainEntry; .js in the compiled package) with `args`, and resolves once it is ready.
 */
export async function startLocalProcess<Ready>(besideUrl: string, name: string, args: readonly string[]) {
  const beside = fileURLToPath(besideUrl);
  const extension = extname(beside);
  const entry = fileURLToPath(new URL(`./${name}${extension}`, besideUrl));
  const child = fork(extension === '.ts' ? await plainEntry(entry) : entry, [...args], {
    execArgv: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waiting = new Map<number, { answered: (value: unknown) => void; failed: (error: Error) => void }>();
  // A question the child can no longer answer fails rather than waits for ever.
  child.once('exit', (code, signal) => {
    for (const { failed } of waiting.values())
      failed(new Error(`${name} exited (${signal ?? code}) before it answered`));
    waiting.clear();
  });
  let questions = 0;
  return new Promise<LocalProcess<Ready>>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${name} exited with code ${code} before it was ready`)));
    child.on('message', (message: ChildMessage) => {
      if ('answer' in message) {
        waiting.get(message.answer)?.answered(message.value);
        waiting.delete(message.answer);
        if (waiting.size === 0) child.channel?.unref();
        return;
      }
      if ('failed' in message) {
        reject(new Error(`${name} failed to start: ${message.failed}`));
        return;
      }
      // The child lives as long as this process wants it, not the other way round: it alone must not keep it running.
      child.unref();
      child.channel?.unref();
      resolve({
        ready: message.ready as Ready,
        ask<Answer>(question?: unknown) {
          const asked = (questions += 1);
          return new Promise<Answer>((answered, failed) => {
            if (!child.connected) {
              failed(new Error(`${name} is no longer running`));
              return;
            }
            waiting.set(asked, { answered: (value) => answered(value as Answer), failed });
            // Awaiting an answer keeps this process alive until it comes: a script whose local
            // timer has stopped may have nothing else running while it asks a kept emulator
            // process for a fresh emulator (Node exits, code 13, on a top-level await left unsettled).
            child.channel?.ref();
            child.send({ ask: asked, question } satisfies ParentMessage);
          });
        },
        async stop() {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.ref();
          child.send('stop' satisfies ParentMessage);
          await exited;
        },
      });
    });
  });
}

/** What an entry started: what to report to the parent, its answer to a question, and how to stop it. */
export interface Served<Ready> {
  readonly ready: Ready;
  readonly answer?: (question: unknown) => unknown;
  stop(): Promise<void>;
}

/** The entry's side: starts its service and serves the parent until told to stop or orphaned. */
export async function serveLocalProcess<Ready>(start: () => Promise<Served<Ready>>): Promise<void> {
  const send = (message: ChildMessage) => process.send?.(message);
  process.on('disconnect', () => process.exit(0));
  try {
    const served = await start();
    process.on('message', (message: ParentMessage) => {
      if (message === 'stop') {
        served.stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
        return;
      }
      void Promise.resolve(served.answer?.(message.question)).then((value) => send({ answer: message.ask, value }));
    });
    send({ ready: served.ready });
  } catch (error) {
    send({ failed: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  }
}
