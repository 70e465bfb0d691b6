/** What another CDK app imports to run the timer inside its own stacks. */
export { DEFAULT_SETTINGS, METRICS, type TimerSettings } from '../functions/contract/topology.js';
export {
  DEFAULT_API_THROTTLE,
  DistributedTimer,
  type DistributedTimerProps,
  type TimerAlarmKey,
} from './construct/distributed-timer.js';
export { TimerStack, type TimerStackProps } from './construct/timer-stack.js';
