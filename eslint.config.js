// typescript-eslint strict-type-checked: a daemon cannot afford a floating promise.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "coverage/", "eslint.config.js", "bin/", ".scratch/"] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/restrict-template-expressions": [
        "error",
        { allowNumber: true, allowBoolean: true, allowNullish: true, allowRegExp: true },
      ],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-unnecessary-condition": ["error", { allowConstantLoopConditions: true }],
    },
  },
  {
    // Dashboards are written with the SDK's v1 dashboard builders on purpose: v1 JSON imports and
    // provisions on every Grafana in use, the v2 schema the SDK prefers needs Grafana 12's v2 API.
    files: ["deploy/grafana/src/**/*.ts"],
    rules: { "@typescript-eslint/no-deprecated": "off" },
  },
  {
    // Plain JavaScript on purpose (bench/daemon-drain.mjs runs without the TypeScript loader): linted
    // without type information, which only the TypeScript project has.
    files: ["**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: "readonly", URL: "readonly", AbortController: "readonly" },
    },
  },
  {
    files: ["test/**/*.ts", "bench/**/*.ts"],
    rules: {
      // node:test's describe/it return promises that the runner itself awaits.
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            { from: "package", name: ["describe", "it", "test", "suite"], package: "node:test" },
          ],
        },
      ],
    },
  },
);
