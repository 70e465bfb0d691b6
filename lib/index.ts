/** What another CDK app imports to run the timer inside its own stacks. */
export {
  DEFAULT_API_THROTTLE,
  DistributedTimer,
  type DistributedTimerProps,
  type TimerAlarmKey,
} from './distributed-timer';
export { TimerStack, type TimerStackProps } from './timer-stack';
export { DEFAULT_SETTINGS, METRICS, type TimerSettings } from './topology';
