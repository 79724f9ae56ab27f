// `sf2loki config example|reference|schema`: generated from the schema, never reads a config file.
import { Command } from "commander";
import { exampleYaml, jsonSchema, referenceMarkdown } from "../config/generate.ts";
import type { CliIO } from "./exit.ts";

const GENERATORS: Record<string, () => string> = {
  example: exampleYaml,
  reference: referenceMarkdown,
  schema: jsonSchema,
};

export function configCommand(io: CliIO): Command {
  return new Command("config")
    .description(
      "print a generated config artefact: example (annotated YAML), reference (Markdown), schema (JSON Schema)",
    )
    .argument("<kind>", "example | reference | schema")
    .action((kind: string) => {
      const generate = GENERATORS[kind];
      if (!generate) {
        throw new UsageError(
          `unknown config kind '${kind}'; choose one of: ${Object.keys(GENERATORS).join(", ")}`,
        );
      }
      io.stdout(generate());
    });
}

/** A bad command line: exit 2 with usage guidance. */
export class UsageError extends Error {}
