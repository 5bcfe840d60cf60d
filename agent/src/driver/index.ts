export * from './errors.ts';
export * from './scanner-driver.ts';
