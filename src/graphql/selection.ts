// The subfields a resolver's field asks for, through fragments, once per place in a document:
// a resolver can then fetch only what is shown (the viewer-state kinds a page selects, what a
// feed page's posts show).
import { type FieldNode, type GraphQLResolveInfo, Kind, type SelectionSetNode } from 'graphql';

type Fragments = GraphQLResolveInfo['fragments'];

/** Calls `visit` on each field of a selection set, through inline fragments and fragment spreads. */
function eachField(set: SelectionSetNode | undefined, fragments: Fragments, visit: (field: FieldNode) => void) {
  for (const selection of set?.selections ?? []) {
    if (selection.kind === Kind.FIELD) visit(selection);
    else if (selection.kind === Kind.INLINE_FRAGMENT) eachField(selection.selectionSet, fragments, visit);
    else eachField(fragments[selection.name.value]?.selectionSet, fragments, visit);
  }
}

const selected = new WeakMap<FieldNode, ReadonlySet<string>>();

/** The names of the subfields selected on this field (every occurrence of it merged). */
export function subfieldsOf(info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>): ReadonlySet<string> {
  // Documents are parsed once and cached, so their nodes are the same object request after
  // request. A field merged from several nodes is not cached: one of its nodes (in a fragment)
  // may be merged with other nodes elsewhere.
  const only = info.fieldNodes.length === 1 ? info.fieldNodes[0]! : null;
  const known = only && selected.get(only);
  if (known) return known;
  const names = new Set<string>();
  for (const node of info.fieldNodes) eachField(node.selectionSet, info.fragments, (field) => names.add(field.name.value));
  if (only) selected.set(only, names);
  return names;
}

/** The nodes of the field `name` among the subfields of `nodes`, through fragments. */
export function subfieldNodes(nodes: readonly FieldNode[], fragments: Fragments, name: string): FieldNode[] {
  const found: FieldNode[] = [];
  for (const node of nodes) {
    eachField(node.selectionSet, fragments, (field) => {
      if (field.name.value === name) found.push(field);
    });
  }
  return found;
}
