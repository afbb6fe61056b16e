-- Signing keys encrypted at rest. sealed_by is NULL for a key kept in plain
-- text (stored before encryption, or by a store without a secrets key);
-- otherwise it is the id of the secrets key that sealed it, and secret holds
-- a 96-bit nonce followed by the AES-256-GCM ciphertext and tag of the key,
-- with 'oauth_keys/<name>/<id>' as additional data, so that a sealed secret
-- moved to another row does not decrypt.
ALTER TABLE oauth_keys ADD COLUMN sealed_by text;
