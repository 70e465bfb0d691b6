/**
 * Units consumed per id in one-second windows aligned to the clock's seconds, as DynamoDB
 * meters a partition's throughput. A fixed window lets a key spend its whole second at
 * once; DynamoDB's burst capacity (up to 300 s of unused capacity) and adaptive capacity
 * would admit more, so the model throttles no later than AWS would.
 */
export interface MeterReading {
  readonly requests: number;
  readonly units: number;
  readonly throttles: number;
  /** The most units consumed in any one-second window. */
  readonly peakUnitsPerSecond: number;
}

interface MeterEntry {
  requests: number;
  units: number;
  throttles: number;
  peakUnitsPerSecond: number;
  windowSecond: number;
  windowUnits: number;
}

export class WindowMeter {
  private readonly entries = new Map<string, MeterEntry>();

  constructor(private readonly limitPerSecond: number) {}

  get limit(): number {
    return this.limitPerSecond;
  }

  private entry(id: string, nowMs: number): MeterEntry {
    const second = Math.floor(nowMs / 1000);
    let entry = this.entries.get(id);
    if (!entry) {
      entry = { requests: 0, units: 0, throttles: 0, peakUnitsPerSecond: 0, windowSecond: second, windowUnits: 0 };
      this.entries.set(id, entry);
    }
    if (entry.windowSecond !== second) {
      entry.windowSecond = second;
      entry.windowUnits = 0;
    }
    return entry;
  }

  /** Whether `units` more fit in this second's window for `id`; a request that is admitted is charged with `charge`. */
  fits(id: string, units: number, nowMs: number): boolean {
    return this.entry(id, nowMs).windowUnits + units <= this.limitPerSecond;
  }

  /** Records an admitted request's units (which may be known only after it ran). */
  charge(id: string, units: number, nowMs: number, requests = 1): void {
    const entry = this.entry(id, nowMs);
    entry.requests += requests;
    entry.units += units;
    entry.windowUnits += units;
    entry.peakUnitsPerSecond = Math.max(entry.peakUnitsPerSecond, entry.windowUnits);
  }

  throttled(id: string, nowMs: number): void {
    const entry = this.entry(id, nowMs);
    entry.requests += 1;
    entry.throttles += 1;
  }

  readings(): Map<string, MeterReading> {
    return new Map(
      [...this.entries].map(([id, { requests, units, throttles, peakUnitsPerSecond }]) => [
        id,
        { requests, units, throttles, peakUnitsPerSecond },
      ]),
    );
  }
}
