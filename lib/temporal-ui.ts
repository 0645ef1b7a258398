/** The operator's link to a workflow's page in the Temporal UI (pure: resources and command clients both make it). */
export function temporalUiLink(config: { temporal: { uiUrl: string; namespace: string } }, workflowId: string): string {
  const { uiUrl, namespace } = config.temporal;
  return `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
