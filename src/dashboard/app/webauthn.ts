/**
 * Passkeys in the browser: the gateway's WebAuthn options arrive as JSON (the WebAuthn Level 3 JSON
 * forms, binary fields base64url) and the answer goes back as `PublicKeyCredential.toJSON()`. Browsers
 * without those JSON helpers are told passkeys are not supported here (TOTP and recovery codes remain).
 */
type Json = Record<string, unknown>;

interface PkcJson {
  parseCreationOptionsFromJSON?: (o: Json) => PublicKeyCredentialCreationOptions;
  parseRequestOptionsFromJSON?: (o: Json) => PublicKeyCredentialRequestOptions;
}
const pkc = () => (globalThis.PublicKeyCredential ?? {}) as unknown as PkcJson;
const json = (c: Credential | null): Json => {
  if (!c) throw new Error('No passkey answered');
  return (c as unknown as { toJSON: () => Json }).toJSON();
};

export const passkeysSupported = () => Boolean(navigator.credentials && pkc().parseCreationOptionsFromJSON && pkc().parseRequestOptionsFromJSON);

/** Creates a passkey with the gateway's creation options; its JSON for `registerPasskey`. */
export async function createPasskey(options: Json): Promise<Json> {
  return json(await navigator.credentials.create({ publicKey: pkc().parseCreationOptionsFromJSON!(options) }));
}

/** Answers the gateway's request options with a passkey; its JSON for `secondFactor.passkey`. */
export async function answerWithPasskey(options: Json): Promise<Json> {
  return json(await navigator.credentials.get({ publicKey: pkc().parseRequestOptionsFromJSON!(options) }));
}
