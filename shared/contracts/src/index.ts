export * from './crypto/ids.ts';
export * from './envelope.ts';
export * from './errors.ts';
