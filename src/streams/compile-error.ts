/** A stream configuration that cannot compile; `path` names the node (`actions.children[0]`). */
export class CompileError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`invalid stream config: ${path === "" ? "" : `${path}: `}${problem}`);
    this.name = "CompileError";
  }
}
