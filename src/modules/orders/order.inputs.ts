// Kept only for `webhooks/webhook.inputs.ts` (another helper's area while it is split); point it at order.commands.ts, then delete this file.
export { orderNo } from './order.commands.js';
