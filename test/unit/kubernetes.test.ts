// deploy/kubernetes/ checked as far as this machine can without a cluster: every object against
// Kubernetes' OpenAPI schema (kubernetes-models), the settings against loadConfig, and the rules
// docs/deploying.md states (probes, the preStop delay, disruption budgets that select pods).
import { readdirSync, readFileSync } from 'node:fs';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { projectPath } from '../../src/paths.js';

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1 Deployment': Deployment,
  'apps/v1 StatefulSet': StatefulSet,
  'batch/v1 Job': Job,
  'policy/v1 PodDisruptionBudget': PodDisruptionBudget,
  'v1 ConfigMap': ConfigMap,
  'v1 Secret': Secret,
  'v1 Service': Service,
};

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: any;
  data?: any;
  stringData?: any;
};
const dir = projectPath('deploy/kubernetes');
const manifests: Manifest[] = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => parseAllDocuments(readFileSync(`${dir}/${f}`, 'utf8')).map((doc) => doc.toJS() as Manifest));
const find = (kind: string, name: string) => manifests.find((m) => m.kind === kind && m.metadata.name === name)!;

describe('deploy/kubernetes', () => {
  it('holds objects Kubernetes accepts, each valid against its schema', () => {
    expect(manifests.map((m) => `${m.kind}/${m.metadata.name}`).sort()).toEqual(
      [
        'ConfigMap/tally',
        'Deployment/tally-api',
        'Job/tally-migrate',
        'PodDisruptionBudget/tally-api',
        'PodDisruptionBudget/tally-worker',
        'Secret/tally',
        'Service/tally-api',
        'Service/tally-worker',
        'StatefulSet/tally-worker',
      ].sort(),
    );
    for (const m of manifests) {
      const Model = MODELS[`${m.apiVersion} ${m.kind}`];
      expect(Model, `${m.apiVersion} ${m.kind}`).toBeDefined();
      expect(() => new Model!(m as never).validate(), `${m.kind}/${m.metadata.name}`).not.toThrow();
    }
  });

  it('gives every role settings loadConfig takes', () => {
    const settings = { ...find('ConfigMap', 'tally').data, ...find('Secret', 'tally').stringData };
    for (const ROLE of ['api', 'worker']) expect(() => loadConfig({ ...settings, ROLE })).not.toThrow();
  });

  it('probes /readyz and /healthz, waits SHUTDOWN_DELAY_MS before a stop, and keeps pods through disruptions', () => {
    const delayMs = Number(find('ConfigMap', 'tally').data.SHUTDOWN_DELAY_MS);
    expect(delayMs).toBeGreaterThan(0);
    for (const workload of [find('Deployment', 'tally-api'), find('StatefulSet', 'tally-worker')]) {
      const pod = workload.spec.template.spec;
      const [container] = pod.containers;
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      // Both waits and the drain fit the grace period.
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(2 * delayMs + 10_000);
      const budget = manifests.find(
        (m) =>
          m.kind === 'PodDisruptionBudget' &&
          Object.entries(m.spec.selector.matchLabels).every(([k, v]) => workload.spec.template.metadata.labels[k] === v),
      );
      expect(budget, `a disruption budget for ${workload.metadata.name}`).toBeDefined();
    }
    const api = find('Deployment', 'tally-api').spec.template.spec.containers[0];
    expect(api.lifecycle.preStop.exec.command.join(' ')).toContain('SHUTDOWN_DELAY_MS');
    // The worker's MEMBER_ID is its stable pod name.
    const worker = find('StatefulSet', 'tally-worker').spec.template.spec.containers[0];
    expect(worker.env).toContainEqual({ name: 'MEMBER_ID', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } });
  });
});
