-- Offboarding revokes every refresh token family of a user, in one
-- organization or in all of them: find those families by user.
CREATE INDEX oauth_families_user_idx ON oauth_families (user_id, organization_id);
