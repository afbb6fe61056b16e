-- An account's email and phone are NULL when nobody gave them, as the API
-- returns them; they were '' before. An empty string that a client sent is
-- indistinguishable from that default and becomes NULL too.
ALTER TABLE accounts
    ALTER COLUMN email DROP NOT NULL,
    ALTER COLUMN email DROP DEFAULT,
    ALTER COLUMN phone DROP NOT NULL,
    ALTER COLUMN phone DROP DEFAULT;

UPDATE accounts SET email = NULLIF(email, ''), phone = NULLIF(phone, '')
WHERE email = '' OR phone = '';
