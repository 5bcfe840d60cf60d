import { z } from 'zod';

/** What is held over the sensor. `attack` makes it a presentation attack instead of a live hand. */
export const presentationSchema = z
  .object({
    identity: z.string().min(1).max(128),
    hand: z.enum(['left', 'right']),
    attack: z.enum(['print', 'screen']).optional(),
    /** Forced capture defect (too far, blurred, …) passed through to the image source. */
    condition: z
      .enum(['good', 'too_far', 'blurred', 'moved', 'overexposed', 'underexposed', 'partial'])
      .optional(),
  })
  .strict();
export type Presentation = z.infer<typeof presentationSchema>;

/** "alice:right", "alice:left:print" → Presentation. */
export function parsePresentation(text: string): Presentation {
  const [identity, hand = 'right', attack] = text.split(':');
  return presentationSchema.parse({ identity, hand, ...(attack ? { attack } : {}) });
}
