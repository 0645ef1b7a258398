// Every workflow the worker runs. This module is bundled for the Temporal sandbox.
export { apiKeyRotationWorkflow } from './api-key-rotation';
