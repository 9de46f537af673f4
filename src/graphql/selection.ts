// The subfields a resolver's field asks for, through fragments, once per place in a document:
// a resolver can then fetch only what is shown (the viewer-state kinds a page selects, what a
// feed page's posts show).
import { type FieldNode, type GraphQLResolveInfo, Kind, type SelectionSetNode } from 'graphql';

const selected = new WeakMap<FieldNode, ReadonlySet<string>>();

function collect(set: SelectionSetNode | undefined, info: Pick<GraphQLResolveInfo, 'fragments'>, into: Set<string>) {
  for (const selection of set?.selections ?? []) {
    if (selection.kind === Kind.FIELD) into.add(selection.name.value);
    else if (selection.kind === Kind.INLINE_FRAGMENT) collect(selection.selectionSet, info, into);
    else collect(info.fragments[selection.name.value]?.selectionSet, info, into);
  }
}

/** The names of the subfields selected on this field (every occurrence of it merged). */
export function subfieldsOf(info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>): ReadonlySet<string> {
  // Documents are parsed once and cached, so their nodes are the same object request after
  // request. A field merged from several nodes is not cached: one of its nodes (in a fragment)
  // may be merged with other nodes elsewhere.
  const only = info.fieldNodes.length === 1 ? info.fieldNodes[0]! : null;
  const known = only && selected.get(only);
  if (known) return known;
  const names = new Set<string>();
  for (const node of info.fieldNodes) collect(node.selectionSet, info, names);
  if (only) selected.set(only, names);
  return names;
}

function collectNamed(set: SelectionSetNode | undefined, fragments: Fragments, name: string, into: FieldNode[]) {
  for (const selection of set?.selections ?? []) {
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value === name) into.push(selection);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) collectNamed(selection.selectionSet, fragments, name, into);
    else collectNamed(fragments[selection.name.value]?.selectionSet, fragments, name, into);
  }
}

type Fragments = GraphQLResolveInfo['fragments'];

/** The nodes of the field `name` among the subfields of `nodes`, through fragments. */
export function subfieldNodes(nodes: readonly FieldNode[], fragments: Fragments, name: string): FieldNode[] {
  const found: FieldNode[] = [];
  for (const node of nodes) collectNamed(node.selectionSet, fragments, name, found);
  return found;
}
