/**
 * An MCP tool result as the text a model reads: text content as it is, other
 * content (images, audio, resources) as a short description, structured
 * content as JSON when there is nothing else.
 */

interface ContentItem {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string };
}

export interface McpCallResult {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
}

function base64Bytes(data: string | undefined): number {
  return data === undefined ? 0 : Math.floor((data.length * 3) / 4);
}

function describe(item: ContentItem): string {
  switch (item.type) {
    case 'text':
      return item.text ?? '';
    case 'image':
    case 'audio':
      return `[${item.type} ${item.mimeType ?? ''}, ${base64Bytes(item.data)} bytes]`;
    case 'resource': {
      const r = item.resource ?? {};
      const size = r.text !== undefined ? `${r.text.length} characters` : `${base64Bytes(r.blob)} bytes`;
      return `[resource ${r.uri ?? ''}${r.mimeType ? ` (${r.mimeType})` : ''}, ${size}]`;
    }
    case 'resource_link':
      return `[resource link ${item.uri ?? ''}${item.name ? ` "${item.name}"` : ''}]`;
    default:
      return `[${String(item.type)} content]`;
  }
}

export function resultText(result: McpCallResult): string {
  const items = Array.isArray(result.content) ? (result.content as ContentItem[]) : [];
  if (items.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return items.map(describe).join('\n');
}
