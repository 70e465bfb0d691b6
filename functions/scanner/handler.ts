import { loadConfig } from '../commons/config.js';
import { assembleHandler } from '../commons/lambda-chain.js';
import { createScannerHandler } from './app.js';

/** The Lambda entry: config, clients and instrumentation are built once per cold start and reused by every invocation. */
export const handler = await assembleHandler(createScannerHandler, loadConfig('scanner', process.env));
