/** The version of notarize; a test checks it against package.json. */
export const VERSION = '0.1.0';
