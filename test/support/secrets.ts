/** The secrets every test gateway runs with, in-process or spawned (never used outside tests). */
export const TEST_MASTER_KEY = '11'.repeat(32);
export const TEST_JWT_SECRET = 'test-jwt-secret-that-is-long-enough-0123456789';
