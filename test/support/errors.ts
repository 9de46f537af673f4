/** The `extensions.code` a function throws, or 'no error'. */
export function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return (error as { extensions?: { code?: string } }).extensions?.code;
  }
  return 'no error';
}
