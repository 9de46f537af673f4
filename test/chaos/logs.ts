// What the processes said during a row, condensed for the report: their warnings and errors
// (JSON log lines, LOG_LEVEL=warn) counted by message, with the first time each was seen.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const LEVELS: Record<number, string> = { 40: 'warn', 50: 'error', 60: 'fatal' };

export interface LogLine {
  process: string;
  level: string;
  msg: string;
  count: number;
  first: string;
}

export function summarizeLogs(dir: string): LogLine[] {
  const lines: LogLine[] = [];
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.log') && !f.startsWith('redis'));
  } catch {
    return [];
  }
  for (const file of files) {
    const seen = new Map<string, LogLine>();
    for (const text of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!text.startsWith('{')) continue;
      let entry: { level?: number; time?: number; msg?: string; err?: { message?: string }; group?: string };
      try {
        entry = JSON.parse(text);
      } catch {
        continue;
      }
      const level = LEVELS[entry.level ?? 0] ?? String(entry.level);
      // The message plus its error's first line: "what went wrong", without ids and ports.
      const msg = `${entry.msg ?? ''}${
        entry.err?.message
          ? `: ${entry.err.message
              .split('\n')[0]!
              .replace(/\d+\.\d+\.\d+\.\d+:\d+/g, '<addr>')
              .slice(0, 160)}`
          : ''
      }${entry.group ? ` [${entry.group}]` : ''}`;
      const key = `${level}|${msg}`;
      const line = seen.get(key);
      if (line) line.count++;
      else seen.set(key, { process: file.replace(/\.log$/, ''), level, msg, count: 1, first: new Date(entry.time ?? 0).toISOString() });
    }
    lines.push(...seen.values());
  }
  return lines.sort((a, b) => a.first.localeCompare(b.first));
}
