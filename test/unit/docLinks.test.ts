// The README links only inside the repository (a person who clones it has nothing else), and
// every relative link of a Markdown page (the README, docs/, test/chaos/) resolves: to a file
// that exists and, with a #fragment into Markdown, to a heading it has. docs/ may cite
// libraries' own pages.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectPath } from '../../src/paths.js';
import { markdownPages } from '../support/docText.js';

const pages = markdownPages();

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

function anchorsIn(file: string): Set<string> {
  const text = readFileSync(projectPath(file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => anchorOf(m[1]!)));
}

function linksIn(file: string): string[] {
  const text = readFileSync(projectPath(file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe('documentation links', () => {
  it.each(pages)('%s: every link resolves (the README: only inside the repository)', (page) => {
    const broken: string[] = [];
    for (const link of linksIn(page)) {
      if (/^https?:/.test(link)) {
        // The README may name the service itself as run locally, nothing else outside.
        if (page === 'README.md' && !/^http:\/\/localhost[:/]/.test(link)) broken.push(`${link} (outside the repository)`);
        continue;
      }
      const [target = '', fragment] = link.split('#');
      const file = target === '' ? page : path.normalize(path.join(path.dirname(page), target));
      if (file.startsWith('..') || !existsSync(projectPath(file))) {
        broken.push(`${link} (no such file in the repository)`);
        continue;
      }
      if (fragment && file.endsWith('.md') && !anchorsIn(file).has(fragment)) broken.push(`${link} (no such heading)`);
    }
    expect(broken).toEqual([]);
  });
});
