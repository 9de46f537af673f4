// A one-line progress bar on stderr for long CLI runs (plain lines when not a terminal).
export function createProgressBar(label: string) {
  const tty = process.stderr.isTTY;
  let lastLine = 0;
  return {
    update(step: string, done: number, total: number) {
      const ratio = total > 0 ? Math.min(1, done / total) : 1;
      const width = 30;
      const filled = Math.round(ratio * width);
      const text = `${label} ${step.padEnd(7)} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(ratio * 100).toFixed(0).padStart(3)}% ${done}/${total}`;
      if (tty) process.stderr.write(`\r${text}`);
      else if (Date.now() - lastLine > 2000 || ratio === 1) {
        lastLine = Date.now();
        process.stderr.write(`${text}\n`);
      }
    },
    end() {
      if (tty) process.stderr.write('\n');
    },
  };
}
