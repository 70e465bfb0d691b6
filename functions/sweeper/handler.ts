import { loadConfig } from '../commons/config.js';
import { assembleHandler } from '../commons/lambda-chain.js';
import { createSweeperHandler } from './app.js';

/** The Lambda entry: config, clients and instrumentation are built once per cold start and reused by every invocation. */
export const handler = await assembleHandler(createSweeperHandler, loadConfig('sweeper', process.env));
