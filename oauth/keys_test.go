package oauth_test

const testIssuer = "https://issuer.test"
